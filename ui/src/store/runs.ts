// The runs of the store as the run views show them: the list of sessions, and the one opened,
// kept live from the facade's event stream (no polling): its tasks' states, its attempts (each
// as the store keeps it, with its instance, task and scope iterations), the exact blueprint
// versions it runs (drawn on a read-only canvas, inner blueprints openable), the selected attempt with
// its details, and the controls that act on it. A run mirrored from an antikythera server shows
// the same way; its link to the server (whether it answers) is kept live too.
import { createStore, type StoreApi } from "zustand/vanilla";
import type {
  Attempt,
  BlueprintChangesAnswer,
  BreakpointArgument,
  CompareSessionsAnswer,
  GetAttemptAnswer,
  GetSessionNotesAnswer,
  HeldTask,
  InputLineage,
  InstanceInfo,
  LinkState,
  ReleaseHow,
  RestartSessionArguments,
  Session,
  SessionEvent,
  SessionListing,
  SessionState,
  SessionTimingAnswer,
  Simulation,
  TaskInputsAnswer,
  TaskState,
} from "../backend/generated";
import type { Backend } from "../backend/types";
import { parseBlueprint, type Blueprint } from "../blueprint";
import type { Growth, LogSource } from "../runs/log/reader";
import type { AttemptRef } from "../runs/timeline/model";
import { Replay } from "../runs/travel/replay";
import { afterNextFrame, mark } from "../timing";
import { createEditorStore, type EditorStore, type Layout } from "./editor";

/** How the launch dialog starts a run beyond its parameters. */
export type LaunchHow = {
  /** Run without processes (`start_session`'s `simulate`); this machine only. */
  simulate?: Simulation;
  /** A task that fails holds the run there instead of failing it. */
  hold_on_failure?: boolean;
};

export type { AttemptRef };

/** A blueprint instance shown on the run's canvas: the root, or one drilled into. */
export type RunLevel = { instance: string; editor: EditorStore };

export type OpenRun = {
  session: Session;
  /** Whether a live runner drives it. */
  driven: boolean;
  /** Its tasks waiting for an answer, by node key (the facade says which). */
  waiting: string[];
  /** Its tasks held at a breakpoint, and where (before the task starts, after it ended). */
  held: HeldTask[];
  /** Its breakpoints while a runner drives it: where each task holds. */
  breakpoints: HeldTask[];
  /** The runs that restart it, oldest first (the one it restarts: `session.restarted_from`). */
  restarts: Session[];
  /** Its task nodes by node key: which instance and task each is, and its state. */
  nodes: Record<string, RunNode>;
  /** In start order. */
  attempts: Attempt[];
  /** The blueprint versions it runs, by blueprint id. */
  blueprints: Record<string, Blueprint>;
  instances: InstanceInfo[];
  /** The breadcrumb: the root instance first. */
  levels: RunLevel[];
  selected: AttemptRef | null;
  details: GetAttemptAnswer | null;
  /** For the selected task while it is held before it starts: what it is about to read. */
  reads: TaskInputsAnswer | null;
  /** Which output fed which input, the whole session's; loaded once an attempt is selected. */
  lineage: InputLineage[] | null;
  /** For the mirror of a server's session (`session.remote`): whether the server answers; null for a local run. */
  link: LinkState | null;
  /** What the agent that started it wrote meanwhile: its task memory and checklists (null: not read yet). */
  notes: GetSessionNotesAnswer | null;
};

/** A task node of a run, as the facade names it. */
export type RunNode = { instance: string; task: string; state: TaskState };

/** Time travel on the open run: its replay (its history read once), and the moment shown. */
export type Travel = { replay: Replay; at: number };

/** A session's time against its blueprint's past runs (`session_timing`), and when it was read. */
export type TimingRead = { timing: SessionTimingAnswer; at: number };

export type RunFilter = { text: string; state: SessionState | "all" };

/** What can be done to a whole session. */
export type SessionAction = "pause" | "stop" | "resume" | "restart";

/**
 * A retry (resume) or a restart asked of a run whose blueprint file changed since it started:
 * the user chooses between the file as saved now and the version the run ran.
 */
export type Rerun =
  | { action: "resume" | "restart"; changes: BlueprintChangesAnswer }
  | { action: "from"; node: string; changes: BlueprintChangesAnswer };
/** What can be done to one task of a session. */
export type TaskAction = "cancel" | "skip" | "reset" | "reset-downstream";

export type RunsState = {
  sessions: SessionListing[];
  filter: RunFilter;
  run: OpenRun | null;
  /** Two runs side by side, the older first; shown instead of the open run's views. */
  comparison: CompareSessionsAnswer | null;
  /** The last thing the user should know about a run: what an action did, or why it failed. */
  notice: { text: string; error: boolean } | null;
  /**
   * The growth of the selected attempt's log as last announced (null: none announced). Apart from
   * the run: a log growing many times a second redraws the log viewer, not every view of the run.
   */
  grew: Growth | null;
  /** Each session's time against its past runs as last read, by session id. */
  timings: Record<string, TimingRead>;
  /** The open run as it stood at a moment (time travel); null: as it stands. */
  travel: Travel | null;

  refresh(): Promise<void>;
  /**
   * Reads a session's time again: the open run's when it opens and ends, a running one's every
   * few seconds while the runs are shown (its time left counts down between two reads).
   */
  loadTiming(sessionId: string): Promise<void>;
  /** Starts time travel on the open run (reads its history): at `at`, else at its end. */
  startTravel(at?: number): Promise<void>;
  /** Shows the open run as it stood at `at` (clamped to its history). */
  travelTo(at: number): void;
  /** Back to the run as it stands. */
  stopTravel(): void;
  setFilter(filter: Partial<RunFilter>): void;
  /** Opens a run; with `node`, its latest attempt at that task is selected (lineage across runs). */
  open(sessionId: string, node?: string): Promise<void>;
  /** Selects an attempt of a node (`{instance}.{task}`); attempt 0: a task that never ran. */
  select(ref: AttemptRef | null): void;
  /** Selects a task of the shown instance by its id: its latest attempt. */
  selectTask(taskId: string): void;
  /** Opens the inner blueprint instance a composite of the shown instance runs. */
  drillInto(taskId: string): void;
  backTo(depth: number): void;
  /** Takes one event of the facade's stream into account. */
  event(event: SessionEvent): void;
  /** Events were missed: the list and the open run are read again. */
  resync(): void;
  /**
   * Does `action` to the open run. A retry or a restart of a run whose file changed since asks
   * first (`rerun`), unless `with` says how: `"ran"` the versions it ran (a retry goes on in the
   * same session), `"saved"` the file as saved now (a new session, which for a retry keeps what
   * finished and did not change).
   */
  act(action: SessionAction, with_?: "ran" | "saved"): Promise<void>;
  /**
   * "Run from here": a new session that keeps what the open run finished before `node` and runs
   * `node` and what follows it. Asks first, as a restart does, when the file changed since.
   */
  runFrom(node: string, with_?: "ran" | "saved"): Promise<void>;
  /** The choice a retry, restart or run from a task waits for; null when none is asked. */
  rerun: Rerun | null;
  cancelRerun(): void;
  actOnTask(action: TaskAction, node: string): Promise<void>;
  /** Lets go of the task held at a breakpoint (`continue_session`): continue, step or skip. */
  release(node: string, how: ReleaseHow): Promise<void>;
  /** Sets (`before`, `after`) or clears (null) a breakpoint of the open run while it runs (`set_breakpoint`). */
  setBreakpoint(node: string, at: "before" | "after" | null): Promise<void>;
  /** Sets a value of the open run's data while a task is held (`set_session_data`). */
  setData(instance: string, key: string, value: unknown): Promise<void>;
  resetScope(node: string): Promise<void>;
  answer(node: string, value: unknown): Promise<void>;
  /** Starts a session of a saved blueprint file and opens it. */
  launch(file: string, params: Record<string, unknown>, breakpoints?: BreakpointArgument[], how?: LaunchHow): Promise<string | null>;
  saveLog(): Promise<void>;
  /** Compares the open run with another one (the older of the two is the baseline). */
  compareWith(sessionId: string): Promise<void>;
  closeComparison(): void;
  /** Where the log viewer reads an attempt's log from; with `untilMs`, as it was at that moment. */
  logSource(sessionId: string, node: string, attempt: number, untilMs?: number): LogSource;
  /**
   * Reads the open run's agent notes again. An agent writes them through another connection
   * (they raise no session event): the notes panel asks while it is shown.
   */
  loadNotes(): Promise<void>;
};

export type RunsStore = StoreApi<RunsState>;

/** The latest attempt at a node, if it ran. */
export function latestAttempt(attempts: Attempt[], node: string): Attempt | undefined {
  for (let i = attempts.length - 1; i >= 0; i--) if (attempts[i]!.node === node) return attempts[i];
  return undefined;
}

/** Events come in bursts (a fan-out starts many tasks): the open run is read again at most once
 * per RELOAD_AFTER_MS, the list of runs at most once per LIST_AFTER_MS. */
const RELOAD_AFTER_MS = 60;
const TRAVEL_AFTER_MS = 1000;
const LIST_AFTER_MS = 400;

export function createRuns(backend: Backend, layout: Layout): RunsStore {
  // Answers for a run that is no longer the one open are dropped.
  let opened = 0;
  /** The session being opened, and whether an event of it came while it was read. */
  let opening: { id: string; missed: boolean } | null = null;
  let reloadTimer: ReturnType<typeof setTimeout> | undefined;
  let listTimer: ReturnType<typeof setTimeout> | undefined;
  let detailsSerial = 0;
  let travelTimer: ReturnType<typeof setTimeout> | undefined;
  /** Time travel started, then stopped: a history read for the one stopped is dropped. */
  let travels = 0;

  return createStore<RunsState>()((set, get) => {
    const fail = (e: unknown) => set({ notice: { text: e instanceof Error ? e.message : String(e), error: true } });
    const tell = (text: string) => set({ notice: { text, error: false } });

    function patchRun(change: Partial<OpenRun>) {
      const { run } = get();
      if (run) set({ run: { ...run, ...change } });
    }

    /** A read-only canvas of one instance's blueprint. */
    function levelFor(instance: InstanceInfo, blueprints: Record<string, Blueprint>, file?: string | null): RunLevel | null {
      const blueprint = blueprints[instance.blueprint_id];
      if (!blueprint) return null;
      const editor = createEditorStore(backend, layout);
      // The root is drawn as its file is laid out in the editor, when the run knows the file.
      // After two frames: the timeline draws its bars in the first and paints them, and only then
      // is the blueprint's text made and sent to the facade's checks (for 10,000 tasks, about
      // 50 ms of the page) and laid out; made right after the bars were drawn, that work held the
      // frame that paints them (about 140 ms at 10,000 attempts). The graph comes after the
      // timeline anyway.
      void afterNextFrame()
        .then(afterNextFrame)
        .then(() => editor.getState().create(blueprint, file ?? undefined));
      return { instance: instance.id, editor };
    }

    /** The session's state, tasks and attempts again (after a burst of events). */
    async function reload() {
      const { run } = get();
      if (!run) return;
      const mine = opened;
      try {
        const view = await backend.call("get_session", { session_id: run.session.id });
        if (mine !== opened) return;
        const { session, driven, waiting, held, restarts, attempts } = view;
        const before = get().run;
        // A run that has just failed leads to its failure; one that has just held at a breakpoint
        // to the held task; otherwise the shown task follows its newest attempt.
        const failedNow = session.state === "failed" && before?.session.state !== "failed";
        const heldNow = held.find((h) => !before?.held.some((b) => b.node === h.node && b.at === h.at));
        const selected =
          (failedNow && failedAttempt(attempts)) ||
          (heldNow && { node: heldNow.node, attempt: latestAttempt(attempts, heldNow.node)?.attempt ?? 0 }) ||
          followed(before?.selected ?? null, before?.attempts ?? [], attempts);
        const breakpoints = view.breakpoints ?? [];
        patchRun({ session, driven, waiting, held, breakpoints, restarts, nodes: nodesOf(view.tasks), attempts, selected, link: view.link ?? null });
        if (get().travel) travelSoon();
        void loadDetails();
        void loadLineage();
        void get().loadNotes();
      } catch (e) {
        if (mine === opened) fail(e);
      }
    }

    /**
     * A run that goes on while it is travelled in: its history is read again at most once per
     * TRAVEL_AFTER_MS (a history of 10,000 tasks is some 40,000 changes). A moment at the end of
     * the history stays at the end: it follows the run.
     */
    function travelSoon() {
      if (travelTimer !== undefined) return;
      travelTimer = setTimeout(() => {
        travelTimer = undefined;
        const travel = get().travel;
        if (travel) void get().startTravel(travel.at >= travel.replay.end ? undefined : travel.at);
      }, TRAVEL_AFTER_MS);
    }

    /** At most one reload per period, however steady the stream: a busy run keeps its timeline live. */
    function reloadSoon() {
      if (reloadTimer !== undefined) return;
      reloadTimer = setTimeout(() => {
        reloadTimer = undefined;
        void reload();
      }, RELOAD_AFTER_MS);
    }

    /** The list follows a steady stream of events too: once per period, not after the stream calms. */
    function refreshListSoon() {
      if (listTimer !== undefined) return;
      listTimer = setTimeout(() => {
        listTimer = undefined;
        void get().refresh();
      }, LIST_AFTER_MS);
    }

    async function loadDetails() {
      const selected = get().run?.selected;
      const mine = ++detailsSerial;
      void loadReads(mine);
      if (!selected || selected.attempt === 0) {
        patchRun({ details: null });
        return;
      }
      try {
        const details = await backend.call("get_attempt", {
          session_id: get().run!.session.id,
          task: selected.node,
          attempt: selected.attempt,
        });
        if (mine === detailsSerial) patchRun({ details });
      } catch (e) {
        if (mine === detailsSerial) fail(e);
      }
    }

    /** What the selected task is about to read, while it is held before it starts. */
    async function loadReads(mine: number) {
      const run = get().run;
      const node = run?.selected?.node;
      if (!run || !node || !run.held.some((h) => h.node === node && h.at === "before")) {
        if (run?.reads) patchRun({ reads: null });
        return;
      }
      try {
        const reads = await backend.call("task_inputs", { session_id: run.session.id, task: node });
        if (mine === detailsSerial) patchRun({ reads });
      } catch {
        // Extra: the details show without it.
      }
    }

    /** The lineage, when an attempt is selected to show it for. */
    async function loadLineage() {
      const run = get().run;
      if (!run?.selected) return;
      const mine = opened;
      try {
        const { inputs } = await backend.call("get_lineage", { session_id: run.session.id });
        if (mine === opened) patchRun({ lineage: inputs });
      } catch {
        // Lineage is extra: the details show without it.
      }
    }

    /** What changed in the open run's file since it started, when the user is to be asked. */
    async function changedSince(run: OpenRun, with_: "ran" | "saved" | undefined): Promise<BlueprintChangesAnswer | null> {
      if (with_ !== undefined || !run.session.file || run.session.remote) return null;
      // Runs keep the version they started with; the user is told when the file moved on.
      try {
        const changes = await backend.call("blueprint_changes", { session_id: run.session.id });
        return changes.summary === "no change" ? null : changes;
      } catch {
        // The file cannot be read (moved, deleted): the run goes on as it ran.
        return null;
      }
    }

    /** Restarts session `session_id` as a new session, then opens it. */
    async function newRun(session_id: string, args: Omit<RestartSessionArguments, "session_id">, what: string) {
      try {
        const started = await backend.call("restart_session", { session_id, ...args });
        await get().refresh();
        await get().open(started.session_id);
        tell(what);
      } catch (e) {
        fail(e);
      }
    }

    async function intervene(what: string, call: () => Promise<unknown>) {
      try {
        await call();
        tell(what);
      } catch (e) {
        fail(e);
      }
      await reload();
      refreshListSoon();
    }

    return {
      sessions: [],
      filter: { text: "", state: "all" },
      run: null,
      comparison: null,
      notice: null,
      grew: null,
      timings: {},
      travel: null,

      async startTravel(at) {
        const run = get().run;
        if (!run) return;
        const [mine, journey] = [opened, travels];
        try {
          const history = await backend.call("session_history", { session_id: run.session.id });
          const current = get().run;
          if (mine !== opened || journey !== travels || !current) return;
          const replay = new Replay(history, current.attempts);
          const moment = Math.min(Math.max(at ?? replay.end, replay.start), replay.end);
          replay.seek(moment);
          set({ travel: { replay, at: moment } });
        } catch (e) {
          if (mine === opened) fail(e);
        }
      },

      travelTo(at) {
        const travel = get().travel;
        if (!travel) return;
        const moment = Math.min(Math.max(at, travel.replay.start), travel.replay.end);
        if (moment === travel.at) return;
        travel.replay.seek(moment);
        set({ travel: { replay: travel.replay, at: moment } });
      },

      stopTravel() {
        travels++;
        clearTimeout(travelTimer);
        travelTimer = undefined;
        set({ travel: null });
      },

      async loadTiming(sessionId) {
        try {
          const timing = await backend.call("session_timing", { session_id: sessionId });
          set({ timings: { ...get().timings, [sessionId]: { timing, at: Date.now() } } });
        } catch {
          // Extra: a run shows without its time left (a run deleted meanwhile, a store too old).
        }
      },

      async refresh() {
        try {
          set({ sessions: await backend.call("list_sessions", { limit: 500 }) });
        } catch (e) {
          fail(e);
        }
      },

      setFilter(filter) {
        set({ filter: { ...get().filter, ...filter } });
      },

      async open(sessionId, node) {
        const mine = ++opened;
        const watch = { id: sessionId, missed: false };
        opening = watch;
        set({ notice: null, comparison: null, travel: null });
        mark("run-open");
        try {
          const [view, ran] = await Promise.all([
            backend.call("get_session", { session_id: sessionId }),
            backend.call("get_session_blueprints", { session_id: sessionId }),
          ]);
          if (mine !== opened) return;
          mark("run-fetched", { attempts: view.attempts.length });
          const blueprints: Record<string, Blueprint> = {};
          for (const version of [ran.root, ...ran.inner]) {
            const parsed = parseBlueprint(version.text);
            if ("blueprint" in parsed) blueprints[version.blueprint_id] = parsed.blueprint;
          }
          // The view is made in a task of its own: the answers' parse and the blueprints' held
          // the page in the same task as the view's first render (93-122 ms at 10,000 attempts).
          await new Promise((resolve) => setTimeout(resolve));
          if (mine !== opened) return;
          const root = ran.instances[0];
          const level = root ? levelFor(root, blueprints, view.session.file) : null;
          set({
            run: {
              session: view.session,
              driven: view.driven,
              waiting: view.waiting,
              held: view.held,
              breakpoints: view.breakpoints ?? [],
              restarts: view.restarts,
              nodes: nodesOf(view.tasks),
              attempts: view.attempts,
              blueprints,
              instances: ran.instances,
              levels: level ? [level] : [],
              selected: null,
              details: null,
              reads: null,
              lineage: null,
              link: view.link ?? null,
              notes: null,
            },
          });
          void get().loadNotes();
          mark("run-shown");
          // What changed while it was read (a run just launched or followed) is read again.
          if (watch.missed) reloadSoon();
          const held = view.held[0]?.node;
          if (node) get().select({ node, attempt: latestAttempt(view.attempts, node)?.attempt ?? 0 });
          // A run that holds opens on its held task (it may hold before the run view first reads it).
          else if (held) get().select({ node: held, attempt: latestAttempt(view.attempts, held)?.attempt ?? 0 });
          else if (view.session.state === "failed") {
            // A failed run opens on its failure: the task, its error and its log.
            const failed = failedAttempt(view.attempts);
            if (failed) get().select(failed);
          }
        } catch (e) {
          if (mine === opened) fail(e);
        } finally {
          if (opening === watch) opening = null;
        }
      },

      select(ref) {
        const { run } = get();
        if (!run) return;
        const same = ref && run.selected && ref.node === run.selected.node && ref.attempt === run.selected.attempt;
        if (same) return;
        set({ grew: null });
        patchRun({ selected: ref, details: null });
        void loadDetails();
        if (run.lineage === null) void loadLineage();
      },

      selectTask(taskId) {
        const { run } = get();
        const level = run?.levels.at(-1);
        const node = run && level ? nodeKey(run, level.instance, taskId) : undefined;
        if (!run || node === undefined) return;
        get().select({ node, attempt: latestAttempt(run.attempts, node)?.attempt ?? 0 });
      },

      drillInto(taskId) {
        const { run } = get();
        const level = run?.levels.at(-1);
        const node = run && level ? nodeKey(run, level.instance, taskId) : undefined;
        if (!run || node === undefined) return;
        const inner = run.instances.find((i) => i.composite === node);
        const next = inner ? levelFor(inner, run.blueprints) : null;
        if (next) patchRun({ levels: [...run.levels, next] });
      },

      backTo(depth) {
        const { run } = get();
        if (run && depth < run.levels.length) patchRun({ levels: run.levels.slice(0, depth + 1) });
      },

      event(event) {
        // The list shows sessions, their states and who waits: only those events change it.
        if (LIST_EVENTS.has(event.kind)) refreshListSoon();
        if (opening?.id === event.session_id) opening.missed = true;
        const { run } = get();
        if (!run || event.session_id !== run.session.id) return;
        const selected = run.selected;
        // A cut payload is too long to be a state change: each kind passes it by or reads again.
        switch (event.kind) {
          case "task_state_changed":
            if (event.payload.form === "whole") {
              const { node, blueprint_id: instance, task_id: task, state } = event.payload.value;
              patchRun({ nodes: { ...run.nodes, [node]: { instance, task, state } } });
            }
            break;
          // Attempts are applied as they come: a run of 10,000 attempts is not read again whole
          // on every start and end of one.
          case "attempt_started":
          case "attempt_settled": {
            const attempts = applyAttempt(run.attempts, event);
            const node = event.payload.form === "whole" ? event.payload.value.node : null;
            if (attempts === null) reloadSoon();
            // A prompt that ended waits no more; one that starts is announced by `prompt_waiting`.
            else if (event.kind === "attempt_settled") patchRun({ attempts, waiting: run.waiting.filter((n) => n !== node) });
            else patchRun({ attempts, selected: followed(selected, run.attempts, attempts) });
            if (selected && node === selected.node) void loadDetails();
            break;
          }
          case "log_grew": {
            if (event.payload.form !== "whole") break;
            const grew = event.payload.value;
            if (selected && grew.node === selected.node && grew.attempt === selected.attempt) {
              const { from, text } = grew;
              const carried = typeof from === "number" && typeof text === "string" ? { from, text } : undefined;
              set({ grew: { fileSize: grew.file_size, carried } });
            }
            break;
          }
          case "progress":
            // A progress event names its attempt, not its node: the attempt's row says which.
            if (selected && run.attempts.some((a) => a.run_id === event.run_id && a.node === selected.node)) void loadDetails();
            break;
          case "data_updated":
            break;
          // Only a following mirror hears from its server: lost (with the reason) or back.
          case "remote_link":
            if (event.payload.form === "whole") {
              const { reachable, message } = event.payload.value;
              patchRun({ link: { reachable, message: message ?? null, following: true } });
            }
            break;
          // The session's own state, prompts, what else its tasks said: read it again.
          case "session_created":
          case "session_state_changed":
          case "prompt_waiting":
          case "prompt_answered":
          case "breakpoints":
          case "data_edited":
          case "notification":
          case "session_blueprints":
          case "broker_dispatch":
          case "log_capped":
            reloadSoon();
            break;
          default: {
            // Every kind this build knows is handled above: a kind added in Rust fails to compile
            // here until it is. One from another build (a newer store) reads the run again.
            const unhandled: never = event;
            void unhandled;
            reloadSoon();
          }
        }
      },

      resync() {
        void get().refresh();
        void reload();
      },

      rerun: null,
      cancelRerun() {
        set({ rerun: null });
      },

      async act(action, with_) {
        const run = get().run;
        if (!run) return;
        const session_id = run.session.id;
        set({ rerun: null });
        if (action === "resume" || action === "restart") {
          const changes = await changedSince(run, with_);
          if (changes) return set({ rerun: { action, changes } });
        }
        switch (action) {
          case "pause":
            return intervene("Pausing: what runs finishes, nothing new starts", () => backend.call("pause_session", { session_id }));
          case "stop":
            return intervene("Stopping", () => backend.call("stop_session", { session_id }));
          case "resume":
            if (with_ === "saved") return newRun(session_id, { saved: true, keep_done: true }, "Retried as a new run with the saved blueprint");
            return intervene("Resumed from where it ended", () => backend.call("resume_session", { session_id }));
          case "restart":
            if (with_ === "saved") return newRun(session_id, { saved: true }, "Restarted as a new run with the saved blueprint");
            return newRun(session_id, {}, "Restarted as a new run");
        }
      },

      async runFrom(node, with_) {
        const run = get().run;
        if (!run) return;
        set({ rerun: null });
        const changes = await changedSince(run, with_);
        if (changes) return set({ rerun: { action: "from", node, changes } });
        const saved = with_ === "saved";
        const what = `Running from ${node} as a new run${saved ? " with the saved blueprint" : ""}: what came before it is kept`;
        await newRun(run.session.id, saved ? { saved: true, from: node } : { from: node }, what);
      },

      async release(node, how) {
        const run = get().run;
        if (!run) return;
        const what = { continue: `${node} goes on`, step: `${node}: one step`, skip: `${node} is skipped` }[how];
        await intervene(what, () => backend.call("continue_session", { session_id: run.session.id, task: node, how }));
      },

      async setBreakpoint(node, at) {
        const run = get().run;
        if (!run) return;
        const what = at === null ? `${node}: breakpoint cleared` : `${node} holds ${at === "before" ? "before it starts" : "after it ends"}`;
        await intervene(what, () => backend.call("set_breakpoint", { session_id: run.session.id, task: node, ...(at === null ? {} : { at }) }));
      },

      async setData(instance, key, value) {
        const run = get().run;
        if (!run) return;
        await intervene(`${instance}.${key} set`, () => backend.call("set_session_data", { session_id: run.session.id, instance, key, value }));
      },

      async actOnTask(action, node) {
        const run = get().run;
        if (!run) return;
        const session_id = run.session.id;
        switch (action) {
          case "cancel":
            return intervene(`Cancelling ${node}`, () => backend.call("cancel_task", { session_id, task: node }));
          case "skip":
            return intervene(`${node} is skipped when it would start`, () => backend.call("skip_task", { session_id, task: node }));
          case "reset":
            return intervene(`${node} reset`, () => backend.call("reset_task", { session_id, task: node }));
          case "reset-downstream":
            return intervene(`${node} and everything after it reset`, () =>
              backend.call("reset_task", { session_id, task: node, downstream: true }),
            );
        }
      },

      async resetScope(node) {
        const run = get().run;
        if (!run) return;
        await intervene(`Scope of ${node} reset`, () => backend.call("reset_scope", { session_id: run.session.id, scope_start: node }));
      },

      async answer(node, value) {
        const run = get().run;
        if (!run) return;
        await intervene(`Answered ${node}`, () => backend.call("answer_prompt", { session_id: run.session.id, task: node, value }));
      },

      async launch(file, params, breakpoints = [], how = {}) {
        try {
          const { session_id } = await backend.call("start_session", {
            file,
            params,
            ...(breakpoints.length > 0 ? { breakpoints } : {}),
            ...how,
          });
          await get().refresh();
          await get().open(session_id);
          return session_id;
        } catch (e) {
          fail(e);
          return null;
        }
      },

      async loadNotes() {
        const mine = opened;
        try {
          const run = get().run;
          if (!run?.session?.started_by) return;
          const notes = await backend.call("get_session_notes", { session_id: run.session.id });
          if (mine === opened) patchRun({ notes });
        } catch {
          // The notes are extra: the run shows without them.
        }
      },

      logSource(session_id, task, attempt, until_ms) {
        return {
          async read(offset, limit) {
            const { window, running } = await backend.call("read_attempt_log", { session_id, task, attempt, offset, limit, until_ms });
            // The log as it was at a moment grows no more.
            return { window, running: until_ms === undefined && running };
          },
        };
      },

      async compareWith(other) {
        const run = get().run;
        if (!run) return;
        const otherListing = get().sessions.find((s) => s.id === other);
        const olderFirst = otherListing !== undefined && otherListing.created_ms <= run.session.created_ms;
        const [a, b] = olderFirst ? [other, run.session.id] : [run.session.id, other];
        try {
          set({ comparison: await backend.call("compare_sessions", { a, b }) });
        } catch (e) {
          fail(e);
        }
      },

      closeComparison() {
        set({ comparison: null });
      },

      async saveLog() {
        const { run } = get();
        const selected = run?.selected;
        if (!run || !selected || selected.attempt === 0) return;
        try {
          const path = await backend.saveAttemptLog(run.session.id, selected.node, selected.attempt);
          if (path !== null) tell(`Log saved to ${path}`);
        } catch (e) {
          fail(e);
        }
      },
    };
  });
}

/** The events after which the list of runs is read again. */
const LIST_EVENTS = new Set<SessionEvent["kind"]>(["session_created", "session_state_changed", "prompt_waiting", "prompt_answered"]);

type AttemptEvent = Extract<SessionEvent, { kind: "attempt_started" | "attempt_settled" }>;

/**
 * The attempts with one started or settled: the event carries the attempt's row as the store
 * keeps it. Null when the event cannot be applied (a cut payload, a settlement of an attempt not
 * seen start): then the run is read again.
 */
export function applyAttempt(attempts: Attempt[], event: AttemptEvent): Attempt[] | null {
  if (event.payload.form !== "whole") return null;
  const row = event.payload.value;
  const at = attempts.findIndex((a) => a.run_id === row.run_id);
  if (event.kind === "attempt_started") return at < 0 ? [...attempts, row] : attempts;
  if (at < 0) return null;
  return attempts.map((a, i) => (i === at ? row : a));
}

/** A task selected before it ran (attempt 0) follows to its first attempt once that has started. */
/**
 * The attempt to show once `before` became `after`: a task selected before it ran follows to its
 * first attempt, and one whose latest attempt was shown follows to a newer one (a retry's).
 */
export function followed(selected: AttemptRef | null, before: Attempt[], after: Attempt[]): AttemptRef | null {
  if (!selected) return selected;
  const latest = latestAttempt(after, selected.node);
  if (!latest || latest.attempt === selected.attempt) return selected;
  const wasLatest = selected.attempt === 0 || latestAttempt(before, selected.node)?.attempt === selected.attempt;
  return wasLatest && latest.attempt > selected.attempt ? { node: selected.node, attempt: latest.attempt } : selected;
}

/** Where a failed run is read from: its latest failed attempt. */
export function failedAttempt(attempts: Attempt[]): AttemptRef | null {
  for (let i = attempts.length - 1; i >= 0; i--) {
    const a = attempts[i]!;
    if (a.state === "failed" || a.state === "unknown") return { node: a.node, attempt: a.attempt };
  }
  return null;
}

function nodesOf(tasks: { node: string; instance: string; task: string; state: TaskState }[]): Record<string, RunNode> {
  const nodes: Record<string, RunNode> = {};
  for (const { node, instance, task, state } of tasks) nodes[node] = { instance, task, state };
  return nodes;
}

/** The key of the node that runs task `task` of instance `instance`, as the facade names it (its nodes, else its attempts). */
export function nodeKey(run: OpenRun, instance: string, task: string): string | undefined {
  for (const [node, n] of Object.entries(run.nodes)) if (n.instance === instance && n.task === task) return node;
  return run.attempts.find((a) => a.instance === instance && a.task === task)?.node;
}

/** The sessions the filter keeps: by state, and by text in the name, blueprint or id. */
export function filterSessions(sessions: SessionListing[], filter: RunFilter): SessionListing[] {
  const text = filter.text.trim().toLowerCase();
  return sessions.filter(
    (s) =>
      (filter.state === "all" || s.state === filter.state) &&
      (text === "" || [s.name, s.blueprint_id, s.id].some((f) => f.toLowerCase().includes(text))),
  );
}
