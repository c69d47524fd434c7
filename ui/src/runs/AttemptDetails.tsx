// The selected attempt: what it read and wrote, how it ended, which iteration of a looped scope
// it ran in, its checklist of progress steps (live), the actions on its task, the question it
// asks when it is a prompt waiting for an answer, and its log in the log viewer (live tail). An
// attempt of a mirrored run ran on the server's agents: it has no log here. A process shows what
// it was started with (program, folder, environment).
import { Fragment, useEffect, useMemo, useState } from "react";
import type { Attempt, BrokerDispatch, ProcessEnvironment, Step, TaskInputsAnswer, TaskTiming } from "../backend/generated";
import { folders } from "../folders";
import { ioOf, type Task } from "../blueprint";
import { useRuns } from "../store/context";
import type { OpenRun } from "../store/runs";
import { preview } from "./CompareView";
import { shortRunId } from "./ids";
import { againstUsual } from "./timeLeft";
import { attemptAt, runningAt } from "./travel/replay";
import { LogView } from "./log/LogView";
import { clockLabel, durationLabel, iterationLabel, iterationOf, modelOf } from "./timeline/model";

export function AttemptDetails({ run }: { run: OpenRun }) {
  const selected = run.selected;
  const timing = useRuns((s) => s.timings[run.session.id]?.timing);
  // Time travelling: the task and its attempt as they stood at the moment shown.
  const travel = useRuns((s) => s.travel);
  if (!selected) return <p className="empty details-empty">Select a task on the graph or a bar on the timeline.</p>;
  const attempts = run.attempts.filter((a) => a.node === selected.node);
  const node = run.nodes[selected.node] ?? attempts[0];
  const state = travel ? (travel.replay.states.get(selected.node) ?? "PENDING") : (run.nodes[selected.node]?.state ?? "PENDING");
  const current = run.details?.attempt ?? attempts.find((a) => a.attempt === selected.attempt) ?? null;
  const then = travel && current ? attemptAt(current, travel.at) : null;
  const attempt = then === "not started" ? null : then === "running" ? runningAt(current!) : current;
  const { instance, task } = node ?? attempt ?? { instance: "", task: selected.node };
  const definition = taskOf(run, instance, task);
  // The timeline's model of the same attempts, built once whoever asks first: the lookup scans nothing.
  const iteration = iterationOf(modelOf(run.attempts), selected);
  return (
    <div className="attempt-details" data-testid="attempt-details" data-node={selected.node} data-attempt={selected.attempt}>
      <header>
        <h3>
          {task} <span className="muted">{instance}</span>
        </h3>
        <span className={`task-state state-${state.toLowerCase()}`} data-testid="task-state">
          {state}
        </span>
      </header>
      {attempts.length > 1 && <AttemptPicker node={selected.node} attempts={attempts} current={selected.attempt} />}
      {travel && current && then && <TravelNote attempt={current} at={travel.at} then={then} />}
      {iteration && (
        <p className="muted scope-iteration" data-testid="scope-iteration">
          {iterationLabel(iteration)}
        </p>
      )}
      <TaskActions run={run} node={selected.node} task={task} attempt={attempt} />
      {attempt?.state === "running" && run.waiting.includes(selected.node) && definition && (
        <PromptAnswer node={selected.node} task={definition} />
      )}
      {run.reads?.node === selected.node && <HeldReads reads={run.reads} />}
      {attempt ? (
        <AttemptFields
          attempt={attempt}
          durationMs={then === "running" ? travel!.at - current!.started_ms : (run.details?.duration_ms ?? null)}
          dispatch={run.details?.dispatch ?? []}
          usual={timing?.tasks.find((t) => t.node === selected.node)}
        />
      ) : run.session.restarted_from && (state === "SUCCEEDED" || state === "SKIPPED") ? (
        <Kept origin={run.session.restarted_from} node={selected.node} />
      ) : (
        <p className="muted">Not run yet.</p>
      )}
      {run.details && run.details.steps.length > 0 && <Steps steps={run.details.steps} />}
      <Lineage run={run} />
    </div>
  );
}

/** Where the attempt stood at time travel's moment, against how it went on. */
function TravelNote({ attempt, at, then }: { attempt: Attempt; at: number; then: ReturnType<typeof attemptAt> }) {
  const later = (ms: number) => `${durationLabel(ms - at)} later`;
  const words =
    then === "not started"
      ? `had not started (it started ${later(attempt.started_ms)})`
      : then === "running"
        ? `was running${attempt.finished_ms != null ? ` (it ended ${later(attempt.finished_ms)}, ${attempt.state})` : ""}`
        : "had ended";
  return (
    <p className="travel-note" data-testid="travel-attempt" data-then={then}>
      At {clockLabel(at)}, attempt #{attempt.attempt} {words}
    </p>
  );
}

/** A task a retry kept from the run it retries: done there, not run again here. */
function Kept({ origin, node }: { origin: string; node: string }) {
  const open = useRuns((s) => s.open);
  return (
    <p className="muted" data-testid="kept-from">
      Kept from{" "}
      <button type="button" className="link" onClick={() => void open(origin, node)} title={origin} data-session-id={origin}>
        run <code>#{shortRunId(origin)}</code>
      </button>
      : it finished there and did not change, so it was not run again.
    </p>
  );
}

/** The blueprint task behind a node, from the versions the run ran. */
function taskOf(run: OpenRun, instance: string, taskId: string): Task | undefined {
  const info = run.instances.find((i) => i.id === instance);
  return info ? run.blueprints[info.blueprint_id]?.tasks.find((t) => t.id === taskId) : undefined;
}

function AttemptPicker({ node, attempts, current }: { node: string; attempts: Attempt[]; current: number }) {
  const select = useRuns((s) => s.select);
  return (
    <div className="attempt-picker" role="tablist" aria-label="Attempts">
      {attempts.map((a) => (
        <button
          key={a.attempt}
          type="button"
          role="tab"
          aria-selected={a.attempt === current}
          className={`state-${a.state}`}
          onClick={() => select({ node, attempt: a.attempt })}
        >
          #{a.attempt}
        </button>
      ))}
    </div>
  );
}

function TaskActions({ run, node, task, attempt }: { run: OpenRun; node: string; task: string; attempt: Attempt | null }) {
  const actOnTask = useRuns((s) => s.actOnTask);
  const runFrom = useRuns((s) => s.runFrom);
  const resetScope = useRuns((s) => s.resetScope);
  const scopes = run.levels.at(-1)?.editor.getState().scopes ?? [];
  const opensScope = scopes.some((s) => s.start === task);
  const running = attempt?.state === "running";
  // Skip and reset change what a runner would do next: only while none drives the session.
  const idle = !run.driven;
  // A server cancels no single task of its sessions: a mirror's cancel would only be refused.
  const cancellable = running && run.driven && !run.session.remote;
  const live = run.driven && run.session.state === "running" && !run.session.remote;
  return (
    <div className="task-actions">
      {live && <RunBreakpoint run={run} node={node} />}
      {cancellable && (
        <button type="button" className="danger" onClick={() => void actOnTask("cancel", node)} data-testid="cancel-task">
          Cancel task
        </button>
      )}
      {idle && !run.session.remote && (
        <button
          type="button"
          className="primary"
          onClick={() => void runFrom(node)}
          data-testid="run-from-here"
          title="A new run that keeps what this run finished before this task, and runs this task and what follows it"
        >
          Run from here
        </button>
      )}
      {idle && (
        <>
          <button type="button" onClick={() => void actOnTask("reset", node)} data-testid="reset-task" title="Back to PENDING: it runs again on resume">
            Reset
          </button>
          <button type="button" onClick={() => void actOnTask("reset-downstream", node)} title="This task and every task after it go back to PENDING">
            Reset with downstream
          </button>
          <button type="button" onClick={() => void actOnTask("skip", node)} title="Skipped when it would start">
            Skip
          </button>
          {opensScope && (
            <button type="button" onClick={() => void resetScope(node)} title="The scope's tasks back to PENDING, its counters to 0">
              Reset scope
            </button>
          )}
        </>
      )}
    </div>
  );
}

/** Where the running session holds at this task, set or cleared from then on. */
function RunBreakpoint({ run, node }: { run: OpenRun; node: string }) {
  const setBreakpoint = useRuns((s) => s.setBreakpoint);
  const at = run.breakpoints.find((b) => b.node === node)?.at ?? "";
  return (
    <select
      value={at}
      onChange={(e) => void setBreakpoint(node, e.target.value === "before" || e.target.value === "after" ? e.target.value : null)}
      aria-label="Breakpoint in this run"
      title="Where this run holds at this task, from now on"
      data-testid="run-breakpoint"
    >
      <option value="">No breakpoint</option>
      <option value="before">Hold before it starts</option>
      <option value="after">Hold after it ends</option>
    </select>
  );
}

/** A prompt waiting for its answer: the question, and its options or a value to type. */
function PromptAnswer({ node, task }: { node: string; task: Task }) {
  const answer = useRuns((s) => s.answer);
  const [text, setText] = useState("");
  const params = Object.fromEntries(ioOf(task, "params").map((p) => [p.name, p.value]));
  const message = typeof params.message === "string" ? params.message : `${task.id} asks for an answer`;
  const options = Array.isArray(params.options) ? params.options : [];
  const outputs = ioOf(task, "outputs").map((o) => o.name);
  return (
    <div className="prompt" data-testid="prompt">
      <p className="prompt-message">{message}</p>
      {options.length > 0 ? (
        <div className="prompt-options">
          {options.map((o) => (
            <button key={JSON.stringify(o)} type="button" className="primary" onClick={() => void answer(node, o)} data-testid="prompt-option">
              {typeof o === "string" ? o : JSON.stringify(o)}
            </button>
          ))}
        </div>
      ) : (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void answer(node, parseAnswer(text));
          }}
        >
          <input
            value={text}
            onChange={(e) => setText(e.target.value)}
            placeholder={outputs.length > 1 ? `JSON object with ${outputs.join(", ")}` : (outputs[0] ?? "answer")}
            aria-label="Answer"
            data-testid="prompt-input"
          />
          <button type="submit" className="primary">
            Answer
          </button>
        </form>
      )}
    </div>
  );
}

/** What was typed: JSON when it reads as JSON (a number, an object), else the text itself. */
export function parseAnswer(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function AttemptFields({
  attempt,
  durationMs,
  dispatch,
  usual,
}: {
  attempt: Attempt;
  durationMs: number | null;
  dispatch: BrokerDispatch[];
  /** Its task's time against its usual in past runs. */
  usual?: TaskTiming;
}) {
  const against = usual ? againstUsual(usual) : null;
  return (
    <dl className="attempt-fields">
      <dt>Attempt</dt>
      <dd>
        #{attempt.attempt} · <span className={`attempt-state state-${attempt.state}`}>{attempt.state}</span>
      </dd>
      <dt>Started</dt>
      {attempt.times_unknown ? (
        <dd data-testid="times-unknown" title="The server keeps no task times: this ran there before Orrery followed the session">
          before Orrery followed · time unknown
        </dd>
      ) : (
        <dd>{clockLabel(attempt.started_ms)}</dd>
      )}
      <dt>Duration</dt>
      <dd>
        {attempt.times_unknown
          ? attempt.state === "running"
            ? "running"
            : "unknown"
          : durationMs !== null
            ? durationLabel(durationMs)
            : attempt.finished_ms != null
              ? durationLabel(attempt.finished_ms - attempt.started_ms)
              : "running"}
      </dd>
      {against && (
        <>
          <dt>Usually</dt>
          <dd className={usual?.slow ? "slow" : undefined} data-testid="usual" data-slow={usual?.slow ? "true" : "false"}>
            {against}
          </dd>
        </>
      )}
      {attempt.exit_code != null && (
        <>
          <dt>Exit code</dt>
          <dd data-testid="exit-code">{attempt.exit_code}</dd>
        </>
      )}
      <dt>Agent</dt>
      <dd>{attempt.agent}</dd>
      {attempt.environment && <Environment environment={attempt.environment} />}
      {dispatch.length > 0 && (
        <>
          <dt>Broker</dt>
          <dd>
            <ol className="dispatch" data-testid="attempt-dispatch">
              {dispatch.map((step, i) => (
                <li key={i}>{dispatchLine(step)}</li>
              ))}
            </ol>
          </dd>
        </>
      )}
      <dt>run_id</dt>
      <dd className="mono">{attempt.run_id}</dd>
      {attempt.error && (
        <>
          <dt>Error</dt>
          <dd className="attempt-error" data-testid="attempt-error">
            {attempt.error.code}: {attempt.error.message}
          </dd>
        </>
      )}
      <Json label="Inputs" value={attempt.inputs} />
      <Json label="Outputs" value={attempt.outputs} />
    </dl>
  );
}

/**
 * What the process was started with: the program its PATH gave, the folder, and its variables
 * (PATH wrapped by folder); why a task that works in a terminal fails in the app, or the reverse.
 */
function Environment({ environment }: { environment: ProcessEnvironment }) {
  const variables = Object.entries(environment.variables);
  return (
    <>
      <dt>Program</dt>
      <dd className="mono" data-testid="attempt-program">
        {environment.program}
      </dd>
      <dt>Folder</dt>
      <dd className="mono">{environment.cwd}</dd>
      <dt>Environment</dt>
      <dd>
        <details className="environment" data-testid="attempt-environment">
          <summary>{variables.map(([name]) => name).join(", ") || "no variables"}</summary>
          <dl className="mono">
            {variables.map(([name, value]) => (
              <Fragment key={name}>
                <dt>{name}</dt>
                <dd data-variable={name}>{name === "PATH" ? folders(value) : value}</dd>
              </Fragment>
            ))}
          </dl>
        </details>
      </dd>
    </>
  );
}

/** A dispatch step in words, as `orrery run` prints it. */
function dispatchLine(step: BrokerDispatch): string {
  switch (step.step) {
    case "allocated":
      return `allocated to agent ${step.agent}`;
    case "republished":
      return `unclaimed, published again (${step.n})`;
    case "silent":
      return `agents ${step.agents.join(", ")} went silent: published again as ${step.assignment}`;
    default: {
      // A step added in Rust fails to compile here until it is worded; one from another build
      // is shown as it came.
      const unknown: never = step;
      return JSON.stringify(unknown);
    }
  }
}

/**
 * What a task held before it starts is about to read: each input, which may be changed (its data
 * key set, kept as an intervention), and its instance's data.
 */
function HeldReads({ reads }: { reads: TaskInputsAnswer }) {
  const setData = useRuns((s) => s.setData);
  // The row being changed: an input (`input:` its name) or a data key (`data:` the key).
  const [editing, setEditing] = useState<{ row: string; key: string; text: string } | null>(null);
  const set = () => {
    if (!editing) return;
    let value: unknown;
    try {
      value = JSON.parse(editing.text);
    } catch {
      value = editing.text; // not JSON: the text itself, as an answer to a prompt is read
    }
    void setData(reads.instance, editing.key, value);
    setEditing(null);
  };
  /** A value with a way to change the data key it is (or is read from). */
  const row = (id: string, key: string, value: unknown, shown: string, testId: string) =>
    editing?.row === id ? (
      <form
        className="held-edit"
        onSubmit={(e) => {
          e.preventDefault();
          set();
        }}
      >
        <input
          aria-label={`New value of ${key}`}
          data-testid={`${testId}-value`}
          value={editing.text}
          onChange={(e) => setEditing({ row: id, key, text: e.target.value })}
          autoFocus
        />
        <button type="submit" data-testid={`${testId}-set`}>
          Set
        </button>
        <button type="button" onClick={() => setEditing(null)}>
          Cancel
        </button>
      </form>
    ) : (
      <>
        <code>{shown}</code>{" "}
        <button
          type="button"
          className="link"
          onClick={() => setEditing({ row: id, key, text: JSON.stringify(value) })}
          data-testid={`${testId}-edit`}
          title={`Set ${reads.instance}.${key}: kept as an intervention, named by lineage`}
        >
          Change
        </button>
      </>
    );
  return (
    <dl className="attempt-fields" data-testid="held-reads">
      <dt>Held</dt>
      <dd>before it starts: it is about to read</dd>
      {reads.problem !== null && (
        <>
          <dt>Inputs</dt>
          <dd className="error">{reads.problem}</dd>
        </>
      )}
      {Object.entries(reads.inputs ?? {}).map(([name, value]) => {
        const key = reads.keys[name] ?? name;
        return (
          <Fragment key={name}>
            <dt title={`reads ${reads.instance}.${key}`}>{name}</dt>
            <dd data-testid="held-input" data-input={name}>
              {row(`input:${name}`, key, value, JSON.stringify(value), "held-input")}
            </dd>
          </Fragment>
        );
      })}
      <dt className="section">Data of {reads.instance}</dt>
      <dd className="section">every value it can read, each to change</dd>
      {Object.entries(reads.data).map(([key, value]) => (
        <Fragment key={key}>
          <dt>{key}</dt>
          <dd data-testid="held-data" data-key={key}>
            {row(`data:${key}`, key, value, preview(value), "held-data")}
          </dd>
        </Fragment>
      ))}
    </dl>
  );
}

function Json({ label, value }: { label: string; value: unknown }) {
  if (value === undefined || value === null || (typeof value === "object" && Object.keys(value).length === 0)) return null;
  return (
    <>
      <dt>{label}</dt>
      <dd>
        <pre className="json">{JSON.stringify(value, null, 2)}</pre>
      </dd>
    </>
  );
}

function Steps({ steps }: { steps: Step[] }) {
  return (
    <ol className="steps" aria-label="Progress steps" data-testid="steps">
      {steps.map((s) => (
        <li key={s.position} className={`step step-${s.state}`}>
          <span className="step-mark" aria-hidden>
            {s.state === "done" ? "✓" : s.state === "in_progress" ? "◐" : "○"}
          </span>
          <span className="step-name">{s.name}</span>
          {s.percentage != null && (
            <span className="step-bar" title={`${s.percentage}%`}>
              <span style={{ width: `${Math.max(0, Math.min(100, s.percentage))}%` }} />
            </span>
          )}
        </li>
      ))}
    </ol>
  );
}

/** The agent the attempts of a mirrored run name: the server ran them. */
const REMOTE_AGENT = "remote";

/** The selected attempt's log, live while it runs. */
/** How long time travel's moment stays still before the log is read as it was then. */
const LOG_SETTLE_MS = 150;

/** `value`, once it has not changed for `ms` (null at once). */
function useSettled(value: number | null, ms: number): number | null {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    if (value === null) return setSettled(null);
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return value === null ? null : (settled ?? value);
}

export function AttemptLog({ run }: { run: OpenRun }) {
  const saveLog = useRuns((s) => s.saveLog);
  const logSource = useRuns((s) => s.logSource);
  const grew = useRuns((s) => s.grew);
  const sessionId = run.session.id;
  const node = run.selected?.node;
  const attempt = run.selected?.attempt ?? 0;
  const shown = run.attempts.find((a) => a.node === node && a.attempt === attempt);
  // The server's agent ran it: its output was never written here, there is nothing to read.
  const remote = shown?.agent === REMOTE_AGENT;
  // Only some agents write a log (shell.run does, a prompt does not).
  const logged = !remote && shown?.log_path != null;
  // Time travelling to a moment the attempt ran at (or before it began): the log as it was then,
  // read once the moment stays still (not on every frame of a drag).
  const travelAt = useRuns((s) => s.travel?.at ?? null);
  const then = travelAt !== null && shown ? attemptAt(shown, travelAt) : null;
  const until = useSettled(then === "running" || then === "not started" ? travelAt : null, LOG_SETTLE_MS);
  const source = useMemo(
    () => (node && logged ? logSource(sessionId, node, attempt, until ?? undefined) : null),
    [logSource, sessionId, node, attempt, logged, until],
  );
  if (remote) {
    return (
      <section className="attempt-log" aria-label="Log">
        <p className="muted remote-log" data-testid="remote-log">
          Remote task: its output stays on the server's agent
        </p>
      </section>
    );
  }
  if (!source) return null;
  return (
    <section className="attempt-log" aria-label="Log">
      <LogView
        source={source}
        grew={until === null ? grew : null}
        onSave={() => void saveLog()}
        ended={until !== null || shown?.state !== "running"}
      />
    </section>
  );
}

/**
 * Where the selected attempt's inputs came from (the attempt that wrote each, its key, a preview
 * of the value it read) and which attempts read what it wrote; each one selects that attempt.
 * A composite also names the inner blueprint instance it runs.
 */
export function Lineage({ run }: { run: OpenRun }) {
  const select = useRuns((s) => s.select);
  const openRun = useRuns((s) => s.open);
  const selected = run.selected;
  if (!selected || run.lineage === null) return null;
  const read = run.lineage.filter((l) => l.node === selected.node && l.attempt === selected.attempt);
  const fed = run.lineage.filter((l) => l.source?.node === selected.node && l.source.attempt === selected.attempt);
  const inner = run.instances.filter((i) => i.composite === selected.node);
  // The same task in the runs this one restarts or is restarted as.
  const related = [
    ...(run.session.restarted_from ? [{ id: run.session.restarted_from, label: "in the run it restarts" }] : []),
    ...run.restarts.map((r) => ({ id: r.id, label: `in its restart (${r.state})` })),
  ];
  if (read.length === 0 && fed.length === 0 && inner.length === 0 && related.length === 0) return null;
  const inputs = (run.details?.attempt.inputs ?? {}) as Record<string, unknown>;
  const link = (node: string, attempt: number) => (
    <button type="button" className="link" onClick={() => select({ node, attempt })} data-testid="lineage-link">
      {node} #{attempt}
    </button>
  );
  return (
    <section className="lineage" aria-label="Lineage" data-testid="lineage">
      {read.length > 0 && (
        <>
          <h4>Read</h4>
          <ul>
            {read.map((l) => (
              <li key={l.input}>
                <span className="mono">{l.input}</span> ← <span className="mono">{l.instance}.{l.key}</span>{" "}
                {l.source ? (
                  link(l.source.node, l.source.attempt)
                ) : l.edit ? (
                  <span className="lineage-edit" data-testid="lineage-edit" title={`edit ${l.edit.id}`}>
                    set by {l.edit.by} at {clockLabel(l.edit.time_ms)}
                  </span>
                ) : (
                  <span className="muted">(a default or a skip)</span>
                )}
                {l.input in inputs && <span className="lineage-value">{preview(inputs[l.input])}</span>}
              </li>
            ))}
          </ul>
        </>
      )}
      {fed.length > 0 && (
        <>
          <h4>Read by</h4>
          <ul>
            {fed.map((l) => (
              <li key={`${l.node}#${l.attempt}.${l.input}`}>
                <span className="mono">{l.instance}.{l.key}</span> → {link(l.node, l.attempt)} <span className="mono">{l.input}</span>
              </li>
            ))}
          </ul>
        </>
      )}
      {inner.length > 0 && (
        <>
          <h4>Runs</h4>
          <ul>
            {inner.map((i) => (
              <li key={i.id}>
                inner blueprint <span className="mono">{i.blueprint_id}</span> as instance <span className="mono">{i.id}</span>
              </li>
            ))}
          </ul>
        </>
      )}
      {related.length > 0 && (
        <>
          <h4>Other runs</h4>
          <ul>
            {related.map((r) => (
              <li key={r.id}>
                <button type="button" className="link" onClick={() => void openRun(r.id, selected.node)} title={r.id} data-testid="lineage-run">
                  {selected.node}
                </button>{" "}
                {r.label} <code>#{shortRunId(r.id)}</code>
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}
