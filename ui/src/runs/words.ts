// A session event in words, for the status bar: what a user would say happened, never the
// event's name. Events that only feed views (log growth, data keys, progress) have none.
import type { SessionEvent } from "../backend/generated";
import { shortRunId } from "./ids";

export function eventWords(event: SessionEvent): string | null {
  const run = `Run #${shortRunId(event.session_id)}`;
  if (event.payload.form !== "whole") return null;
  switch (event.kind) {
    case "session_created":
      return `${run} created`;
    case "session_state_changed": {
      const { state, error } = event.payload.value;
      return error?.message ? `${run} ${state}: ${error.message}` : `${run} ${state}`;
    }
    case "task_state_changed": {
      const { task_id, state } = event.payload.value;
      return `${run}: ${task_id} ${state.toLowerCase().replace("_", " ")}`;
    }
    case "prompt_waiting":
      return `${run}: ${event.payload.value.task} waits for an answer`;
    case "prompt_answered":
      return `${run}: answered`;
    case "notification": {
      const { task, title, message } = event.payload.value;
      return `${run}: ${title ?? message ?? `${task} notifies`}`;
    }
    default:
      return null;
  }
}
