// Time travel: a run as it stood at any moment, rebuilt from its stored history
// (`session_history`: every change of its tasks' states and its own, every value its data held)
// and its attempts. Pure and incremental, because the scrubber asks for a new moment every
// frame: a cursor over the changes moves forward by applying them and back by undoing them (each
// change keeps the state it replaced), so a step costs what changed in between, not the run.
import type { Attempt, DataWrite, SessionHistoryAnswer, SessionState, TaskState } from "../../backend/generated";

/** The states of a run's tasks at a moment, by node key, and how it moved there. */
export class Replay {
  /** The first and the last moment of the run (its creation, its end or the latest change). */
  readonly start: number;
  readonly end: number;
  /** Every moment something happened (a state changed, an attempt started or ended, a value was written), ascending, distinct. */
  readonly moments: Float64Array;

  private readonly nodes: string[];
  private readonly at: Float64Array;
  private readonly node: Uint32Array;
  private readonly state: TaskState[];
  /** The state each change replaced (undefined: the node had none before). */
  private readonly previous: (TaskState | undefined)[];
  private readonly session: { at: number; state: SessionState }[];
  private readonly data: DataWrite[];
  /** How many changes are applied: those at or before the cursor. */
  private applied = 0;
  /** The task states at the cursor. */
  readonly states = new Map<string, TaskState>();

  constructor(history: SessionHistoryAnswer, attempts: readonly Attempt[]) {
    this.nodes = history.nodes;
    const n = history.changes.length;
    this.at = new Float64Array(n);
    this.node = new Uint32Array(n);
    this.state = new Array<TaskState>(n);
    this.previous = new Array<TaskState | undefined>(n);
    const last: (TaskState | undefined)[] = new Array(history.nodes.length);
    history.changes.forEach((c, i) => {
      this.at[i] = c.at;
      this.node[i] = c.node;
      this.state[i] = c.state;
      this.previous[i] = last[c.node];
      last[c.node] = c.state;
    });
    this.session = history.session;
    this.data = history.data;
    const times: number[] = [];
    for (let i = 0; i < n; i++) times.push(this.at[i]!);
    for (const s of history.session) times.push(s.at);
    for (const w of history.data) times.push(w.at);
    for (const a of attempts) {
      if (a.times_unknown) continue;
      times.push(a.started_ms);
      if (a.finished_ms != null) times.push(a.finished_ms);
    }
    times.sort((a, b) => a - b);
    const moments: number[] = [];
    for (const t of times) if (moments.length === 0 || moments[moments.length - 1] !== t) moments.push(t);
    this.moments = Float64Array.from(moments);
    this.start = moments[0] ?? 0;
    this.end = moments[moments.length - 1] ?? 0;
  }

  /** Moves the cursor to `t`: every change at or before it applied, none after. */
  seek(t: number): void {
    while (this.applied < this.at.length && this.at[this.applied]! <= t) {
      const i = this.applied++;
      this.states.set(this.nodes[this.node[i]!]!, this.state[i]!);
    }
    while (this.applied > 0 && this.at[this.applied - 1]! > t) {
      const i = --this.applied;
      const node = this.nodes[this.node[i]!]!;
      const before = this.previous[i];
      if (before === undefined) this.states.delete(node);
      else this.states.set(node, before);
    }
  }

  /** How many state changes happened at or before the cursor, of how many. */
  progress(): { applied: number; of: number } {
    return { applied: this.applied, of: this.at.length };
  }

  /** The session's own state at `t` (pending before its first change). */
  sessionStateAt(t: number): SessionState {
    let state: SessionState = "pending";
    for (const s of this.session) {
      if (s.at > t) break;
      state = s.state;
    }
    return state;
  }

  /** The moment after `t` (direction 1) or before it (-1); `t` itself at either end. */
  step(t: number, direction: 1 | -1): number {
    const m = this.moments;
    // The first moment after t.
    let lo = 0;
    let hi = m.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (m[mid]! <= t) lo = mid + 1;
      else hi = mid;
    }
    if (direction === 1) return lo < m.length ? m[lo]! : t;
    // The last moment before t.
    let i = lo - 1;
    while (i >= 0 && m[i]! >= t) i--;
    return i >= 0 ? m[i]! : t;
  }

  /** The session's data at `t`: each key's value then, by instance, and the write that set it. */
  dataAt(t: number): Map<string, Map<string, DataWrite>> {
    const data = new Map<string, Map<string, DataWrite>>();
    for (const w of this.data) {
      if (w.at > t) break;
      let keys = data.get(w.instance);
      if (!keys) data.set(w.instance, (keys = new Map()));
      keys.set(w.key, w);
    }
    return data;
  }
}

/** An attempt as it stood at `t`: not begun, running, or as it ended. */
export function attemptAt(attempt: Attempt, t: number): "not started" | "running" | "ended" {
  if (attempt.started_ms > t) return "not started";
  if (attempt.finished_ms == null || attempt.finished_ms > t) return "running";
  return "ended";
}

/** An attempt as it stood at `t` while it ran: no end, no exit code, error or outputs yet. */
export function runningAt(attempt: Attempt): Attempt {
  return { ...attempt, state: "running", finished_ms: null, exit_code: null, error: null, outputs: null };
}
