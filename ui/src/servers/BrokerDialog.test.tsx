// @vitest-environment jsdom
import { act } from "react";
import { createRoot, type Root } from "react-dom/client";
import { afterEach, describe, expect, it } from "vitest";
import type { BrokerSettingsAnswer, CheckBrokerAnswer, SaveBrokerSettingsArguments } from "../backend/generated";
import { editorJobs } from "../backend/editor-jobs";
import { MemoryBackend } from "../backend/memory";
import { BackendError } from "../backend/types";
import { runCommand } from "../commands";
import { settled } from "../settled";
import { WorkspaceProvider } from "../store/context";
import { createWorkspace, currentEditor } from "../store/workspace";
import { BrokerDialog } from "./BrokerDialog";

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

/** `mqtt://HOST:PORT`, the port 1883 unless given. */
const normalised = (broker: string) => {
  const address = broker.startsWith("mqtt://") ? broker : `mqtt://${broker}`;
  return /:\d+$/.test(address) ? address : `${address}:1883`;
};

const lab: BrokerSettingsAnswer = { broker: "mqtt://lab:1883", via_broker: ["system.sleep"], agent_timeout_s: 30, agent_retries: 1, claim_wait_s: null };

let root: Root | null = null;
afterEach(() => {
  act(() => root?.unmount());
  root = null;
});

/** The dialog opened by its command, over a facade that keeps the settings as it does. */
async function opened(stored: BrokerSettingsAnswer = lab) {
  let settings = stored;
  const sent: SaveBrokerSettingsArguments[] = [];
  const checks: string[] = [];
  // The check of an address waits until the test answers it.
  let answerCheck: (answer: CheckBrokerAnswer) => void = () => {};
  const backend = new MemoryBackend({
    ...editorJobs(),
    broker_settings: () => settings,
    save_broker_settings: (args) => {
      sent.push(args);
      // As the facade checks and normalises them.
      const broker = args.broker?.trim() || null;
      if (broker !== null && broker.includes("://") && !broker.startsWith("mqtt://")) {
        throw new BackendError("invalid_argument", `'${broker}' is not a broker address: it must start with mqtt://`);
      }
      if (args.agent_timeout_s != null && args.agent_timeout_s <= 0) {
        throw new BackendError("invalid_argument", `agent_timeout_s must be a number of seconds > 0, got ${args.agent_timeout_s}`);
      }
      settings = { ...args, broker: broker === null ? null : normalised(broker) };
      return settings;
    },
    check_broker: ({ broker }) => {
      checks.push(broker);
      return new Promise((resolve) => (answerCheck = resolve));
    },
  });
  const workspace = createWorkspace(backend, async () => ({}));
  await workspace.getState().load();
  const container = document.createElement("div");
  document.body.append(container);
  root = createRoot(container);
  act(() =>
    root!.render(
      <WorkspaceProvider store={workspace}>
        <BrokerDialog />
      </WorkspaceProvider>,
    ),
  );
  // No blueprint is open: the command needs none.
  expect(currentEditor(workspace.getState()).getState().blueprint).toBeNull();
  act(() => runCommand("run.broker", currentEditor(workspace.getState()).getState(), workspace.getState()));
  await settled();
  const find = <E extends Element = HTMLElement>(testid: string) => container.querySelector<E>(`[data-testid=${testid}]`);
  const value = (testid: string) => find<HTMLInputElement>(testid)!.value;
  const click = (testid: string) => act(() => find<HTMLButtonElement>(testid)!.click());
  const type = (testid: string, text: string) =>
    act(() => {
      const field = find<HTMLInputElement>(testid)!;
      Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value")!.set!.call(field, text);
      field.dispatchEvent(new Event("input", { bubbles: true }));
    });
  return { find, value, click, type, sent, checks, answer: (a: CheckBrokerAnswer) => act(() => answerCheck(a)), saved: () => settings };
}

const fields = ["broker-address", "broker-via", "broker-timeout", "broker-retries", "broker-claim-wait"];

describe("the broker settings", () => {
  it("show the saved settings and save the edited ones, as the facade understands them", async () => {
    const { find, value, click, type, sent } = await opened();
    expect(fields.map(value)).toEqual(["mqtt://lab:1883", "system.sleep", "30", "1", ""]);
    type("broker-address", "cell");
    type("broker-via", "system.sleep, user_interaction.* ,");
    type("broker-timeout", "");
    type("broker-retries", "2");
    type("broker-claim-wait", "0.5");
    click("broker-save");
    await settled();
    expect(sent).toEqual([{ broker: "cell", via_broker: ["system.sleep", "user_interaction.*"], agent_timeout_s: null, agent_retries: 2, claim_wait_s: 0.5 }]);
    // The address as the facade normalised it.
    expect(fields.map(value)).toEqual(["mqtt://cell:1883", "system.sleep, user_interaction.*", "", "2", "0.5"]);
    expect(find("broker-saved")).not.toBeNull();
    expect(find("broker-error")).toBeNull();
    type("broker-retries", "3");
    expect(find("broker-saved"), "an edit is not saved yet").toBeNull();
    click("broker-cancel");
    expect(find("broker-dialog")).toBeNull();
  });

  it("show the facade's refusal and stay open, the settings unchanged", async () => {
    const { find, click, type, sent, saved } = await opened();
    type("broker-address", "amqp://h");
    click("broker-save");
    await settled();
    expect(sent).toHaveLength(1);
    expect(find("broker-error")!.textContent).toBe("'amqp://h' is not a broker address: it must start with mqtt://");
    expect(find("broker-dialog")).not.toBeNull();
    expect(find("broker-saved")).toBeNull();
    expect(saved()).toEqual(lab);

    type("broker-address", "mqtt://h:1884");
    click("broker-save");
    await settled();
    expect(find("broker-error")).toBeNull();
    expect(saved().broker).toBe("mqtt://h:1884");
  });

  it("catch a number that is not one before sending, naming the field", async () => {
    const { find, click, type, sent } = await opened();
    type("broker-timeout", "soon");
    click("broker-save");
    await settled();
    expect(find("broker-error")!.textContent).toBe("Agent timeout: 'soon' is not a number of seconds");
    type("broker-timeout", "10");
    type("broker-claim-wait", "2s");
    click("broker-save");
    await settled();
    expect(find("broker-error")!.textContent).toBe("Claim wait: '2s' is not a number of seconds");
    type("broker-claim-wait", "");
    type("broker-retries", "1.5");
    click("broker-save");
    await settled();
    expect(find("broker-error")!.textContent).toBe("Agent retries: '1.5' is not a whole number ≥ 0");
    expect(sent).toEqual([]);
  });

  it("check the address typed: whether it answers, or why not", async () => {
    const { find, click, type, checks, answer } = await opened();
    type("broker-address", "up:1883");
    click("broker-check");
    expect(find("broker-check")!.textContent).toBe("Checking…");
    expect(find<HTMLButtonElement>("broker-check")!.disabled).toBe(true);
    await answer({ broker: "mqtt://up:1883", reachable: true, message: null });
    await settled();
    expect(find("broker-check")!.textContent).toBe("Check connection");
    expect(find("broker-check-result")!.textContent).toBe("mqtt://up:1883 answers");
    expect(find("broker-check-result")!.getAttribute("data-reachable")).toBe("true");

    type("broker-address", "down");
    click("broker-check");
    await answer({ broker: "mqtt://down:1883", reachable: false, message: "mqtt://down:1883: connection refused" });
    await settled();
    expect(find("broker-check-result")!.textContent).toBe("mqtt://down:1883: connection refused");
    expect(find("broker-check-result")!.getAttribute("data-reachable")).toBe("false");
    expect(checks).toEqual(["up:1883", "down"]);
  });

  it("clear the broker, keeping the other settings as saved", async () => {
    const { find, value, click, type, sent } = await opened();
    type("broker-retries", "4");
    click("broker-clear");
    await settled();
    expect(sent).toEqual([{ ...lab, broker: null }]);
    expect(fields.map(value)).toEqual(["", "system.sleep", "30", "1", ""]);
    expect(find<HTMLButtonElement>("broker-clear")!.disabled, "no broker left to clear").toBe(true);
  });

  it("close with Escape", async () => {
    const { find } = await opened();
    expect(find("broker-dialog")).not.toBeNull();
    act(() => window.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape" })));
    expect(find("broker-dialog")).toBeNull();
  });
});
