// For the component tests (jsdom): waiting inside React's act.
import { act } from "react";

/**
 * Lets `turns` turns of the event loop pass inside `act`: the backend's pending answers come and
 * React draws what they changed. Opening a run makes its view a turn after its answers, in a task
 * of its own: a test that opens one waits two.
 */
export const settled = (turns = 1) =>
  act(async () => {
    for (let turn = 0; turn < turns; turn++) await new Promise<void>((resolve) => setTimeout(resolve, 0));
  });
