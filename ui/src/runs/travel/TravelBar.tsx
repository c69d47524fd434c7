// Time travel's controls, over the timeline: a scrubber across the run's time (the timeline's
// axis scrubs too), a step to the event before or after, play at a chosen speed, and back to the
// run as it stands. The moment is asked for at most once a frame, however fast the slider moves.
import { useCallback, useEffect, useRef, useState, type KeyboardEvent } from "react";
import { useRuns, useWorkspaceStore } from "../../store/context";
import { clockLabel, durationLabel } from "../timeline/model";

/** How much faster than the run went a play goes. */
const SPEEDS = [1, 10, 100] as const;

/** The timeline toolbar's switch: opens time travel on the run, or leaves it. */
export function TravelSwitch() {
  const travelling = useRuns((s) => s.travel !== null);
  const startTravel = useRuns((s) => s.startTravel);
  const stopTravel = useRuns((s) => s.stopTravel);
  return (
    <button
      type="button"
      aria-pressed={travelling}
      className={travelling ? "on" : undefined}
      onClick={() => (travelling ? stopTravel() : void startTravel())}
      title="Time travel: see the run as it stood at any moment (drag the scrubber or the timeline's axis)"
      data-testid="travel-switch"
    >
      Time travel
    </button>
  );
}

export function TravelBar() {
  const travel = useRuns((s) => s.travel);
  const travelTo = useRuns((s) => s.travelTo);
  const stopTravel = useRuns((s) => s.stopTravel);
  const [playing, setPlaying] = useState(false);
  const [speed, setSpeed] = useState<(typeof SPEEDS)[number]>(10);
  const moveTo = useFrameThrottled(travelTo);
  const runs = useWorkspaceStore().getState().runs;

  // A play moves the moment on with the clock, `speed` times faster, and stops at the end.
  const end = travel?.replay.end;
  useEffect(() => {
    if (!playing || end === undefined) return;
    let frame = 0;
    let last = performance.now();
    const tick = (now: number) => {
      const travel = runs.getState().travel;
      if (!travel) return;
      const next = travel.at + (now - last) * speed;
      last = now;
      travelTo(next);
      if (next >= end) setPlaying(false);
      else frame = requestAnimationFrame(tick);
    };
    frame = requestAnimationFrame(tick);
    return () => cancelAnimationFrame(frame);
  }, [playing, speed, end, travelTo, runs]);

  if (!travel) return null;
  const { replay, at } = travel;
  const { applied, of } = replay.progress();
  const step = (direction: 1 | -1) => {
    setPlaying(false);
    travelTo(replay.step(at, direction));
  };
  const onKeyDown = (event: KeyboardEvent) => {
    if (event.key === "ArrowLeft" || event.key === "ArrowRight") {
      event.preventDefault();
      step(event.key === "ArrowLeft" ? -1 : 1);
    }
  };
  return (
    <div className="travel-bar" role="toolbar" aria-label="Time travel" data-testid="travel" data-at={at} onKeyDown={onKeyDown}>
      <button type="button" onClick={() => travelTo(replay.start)} title="The run's start" aria-label="To the start">
        ◀◀
      </button>
      <button type="button" onClick={() => step(-1)} title="The event before (←)" aria-label="Step back" data-testid="travel-back">
        ◀
      </button>
      <button
        type="button"
        onClick={() => {
          if (!playing && at >= replay.end) travelTo(replay.start);
          setPlaying(!playing);
        }}
        title={playing ? "Pause" : "Play"}
        aria-label={playing ? "Pause" : "Play"}
        data-testid="travel-play"
      >
        {playing ? "Pause" : "Play"}
      </button>
      <button type="button" onClick={() => step(1)} title="The event after (→)" aria-label="Step forward" data-testid="travel-forward">
        ▶
      </button>
      <button type="button" onClick={() => travelTo(replay.end)} title="The run's end (or its latest event)" aria-label="To the end">
        ▶▶
      </button>
      <input
        type="range"
        min={0}
        max={Math.max(1, replay.end - replay.start)}
        step={1}
        value={at - replay.start}
        onChange={(e) => {
          setPlaying(false);
          moveTo(replay.start + Number(e.target.value));
        }}
        aria-label="The moment shown"
        aria-valuetext={`${durationLabel(at - replay.start)} into the run`}
        data-testid="travel-slider"
      />
      <span className="travel-time" data-testid="travel-time">
        +{durationLabel(at - replay.start)} · {clockLabel(at)} · run {replay.sessionStateAt(at)} · {applied} of {of} changes
      </span>
      <select value={speed} onChange={(e) => setSpeed(Number(e.target.value) as (typeof SPEEDS)[number])} aria-label="Play speed">
        {SPEEDS.map((s) => (
          <option key={s} value={s}>
            {s}x
          </option>
        ))}
      </select>
      <button type="button" className="primary" onClick={stopTravel} title="Back to the run as it stands" data-testid="travel-close">
        Now
      </button>
    </div>
  );
}

/** `f`, called at most once a frame with the latest value asked for. */
function useFrameThrottled(f: (at: number) => void): (at: number) => void {
  const pending = useRef<number | null>(null);
  const frame = useRef(0);
  useEffect(() => () => cancelAnimationFrame(frame.current), []);
  return useCallback(
    (at: number) => {
      pending.current = at;
      if (frame.current) return;
      frame.current = requestAnimationFrame(() => {
        frame.current = 0;
        if (pending.current !== null) f(pending.current);
        pending.current = null;
      });
    },
    [f],
  );
}
