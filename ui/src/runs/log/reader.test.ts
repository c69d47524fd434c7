import { describe, expect, it } from "vitest";
import { lineAt } from "./lines";
import { createLogReader, type LogReader } from "./reader";
import { MemoryLog, numberedLines } from "./testing";

/** Lets every read that is answered at once answer, and the reads they start. */
const settle = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

const shown = (reader: LogReader) => reader.getState().lines?.lines.map((l) => l.raw) ?? [];

describe("reading a log", () => {
  it("opens a large log with one window at its tail, however often it is opened", async () => {
    const log = new MemoryLog(numberedLines(200_000));
    const reader = createLogReader(log);
    reader.getState().open();
    reader.getState().open();
    await settle();
    reader.getState().open();
    await settle();
    expect(log.reads).toEqual([{ offset: -1, limit: 262_144 }]);
    const { lines, fileSize, tailing } = reader.getState();
    expect(lines!.end).toBe(log.size);
    expect(lines!.before).toBe(true);
    expect(fileSize).toBe(log.size);
    expect(tailing).toBe(true);
    expect(shown(reader).at(-1)).toBe("line 200000");
  });

  it("appends what the task writes once it is announced", async () => {
    const log = new MemoryLog("started\n");
    const reader = createLogReader(log);
    reader.getState().open();
    await settle();
    reader.getState().announce(log.write("working\ndone\n"));
    await settle();
    expect(shown(reader)).toEqual(["started", "working", "done"]);
    expect(log.reads.map((r) => r.offset)).toEqual([-1, 8]);
  });

  it("takes growth carried by the announcement without a read when it continues the held range", async () => {
    const log = new MemoryLog("started\n");
    const reader = createLogReader(log);
    reader.getState().open();
    await settle();
    const from = log.size;
    reader.getState().announce(log.write("wörking\n"), { from, text: "wörking\n" });
    await settle();
    expect(shown(reader)).toEqual(["started", "wörking"]);
    expect(log.reads.map((r) => r.offset), "no read after the tail").toEqual([-1]);
    expect(reader.getState().lines!.end).toBe(log.size);
    // Carried text that stops short of the size (a character still being written): the rest is read.
    const next = log.size;
    reader.getState().announce(log.write("done\n"), { from: next, text: "do" });
    await settle();
    expect(shown(reader)).toEqual(["started", "wörking", "done"]);
    expect(log.reads.map((r) => r.offset)).toEqual([-1, next + 2]);
  });

  it("reads instead of taking carried growth that does not continue the held range, or while a read is in flight", async () => {
    const log = new MemoryLog("a\n");
    const reader = createLogReader(log);
    reader.getState().open();
    await settle();
    log.write("b\n");
    // An event missed: this one's text starts past the held range.
    reader.getState().announce(log.write("c\n"), { from: 4, text: "c\n" });
    await settle();
    expect(shown(reader)).toEqual(["a", "b", "c"]);
    expect(log.reads.map((r) => r.offset)).toEqual([-1, 2]);
    log.held = true;
    reader.getState().announce(log.write("d\n"));
    reader.getState().announce(log.write("e\n"), { from: 8, text: "e\n" });
    while (log.answer()) await settle();
    expect(shown(reader), "nothing taken twice").toEqual(["a", "b", "c", "d", "e"]);
    expect(log.mostInFlight).toBe(1);
  });

  it("reads once for a burst of announcements, never two reads at once, from where the last ended", async () => {
    const log = new MemoryLog("a\n");
    const reader = createLogReader(log);
    reader.getState().open();
    await settle();
    log.held = true;
    reader.getState().announce(log.write("b\n"));
    reader.getState().announce(log.write("c\n"));
    reader.getState().announce(log.write("d\n"));
    expect(log.reads.length).toBe(2);
    log.write("e\n");
    expect(log.answer()).toBe(true);
    await settle();
    // The first read saw "b" only; one more reads the rest, "e" too, from where it ended.
    expect(log.reads.slice(1).map((r) => r.offset)).toEqual([2, 4]);
    expect(log.answer()).toBe(true);
    await settle();
    expect(log.answer()).toBe(false);
    expect(shown(reader)).toEqual(["a", "b", "c", "d", "e"]);
    expect(log.mostInFlight).toBe(1);
  });

  it("reads again when the file grew during a read, in windows of the chunk size until the end", async () => {
    const log = new MemoryLog("start\n");
    const reader = createLogReader(log, undefined, 1_024);
    reader.getState().open();
    await settle();
    log.held = true;
    reader.getState().announce(log.write(numberedLines(100)));
    reader.getState().announce(log.write(numberedLines(200, 101)));
    while (log.answer()) await settle();
    expect(shown(reader).length).toBe(301);
    expect(shown(reader).at(-1)).toBe("line 300");
    expect(log.reads.slice(1).every((r, i, all) => i === 0 || r.offset > all[i - 1]!.offset)).toBe(true);
    expect(log.mostInFlight).toBe(1);
  });

  it("reads the window before the held range, keeping its lines whole", async () => {
    const log = new MemoryLog(numberedLines(1_000));
    const reader = createLogReader(log, undefined, 2_048);
    reader.getState().open();
    await settle();
    const first = reader.getState().lines!;
    reader.getState().loadEarlier();
    await settle();
    const lines = reader.getState().lines!;
    expect(log.reads[1]).toEqual({ offset: first.start - 2_048, limit: 2_048 });
    expect(lines.start).toBe(first.start - 2_048);
    expect(lines.end).toBe(first.end);
    // The part of a line that began the tail is now whole, and so is every line after the first.
    expect(shown(reader)[lineAt(lines, first.start)]).toMatch(/^line \d+$/);
    expect(shown(reader).slice(1).every((raw) => /^line \d+$/.test(raw))).toBe(true);
  });

  it("stops tailing when reading earlier dropped the end, and reads the tail afresh when asked", async () => {
    const log = new MemoryLog(numberedLines(1_000));
    const reader = createLogReader(log, { bytes: 3_000, lines: 1_000 }, 2_048);
    reader.getState().open();
    await settle();
    reader.getState().loadEarlier();
    await settle();
    expect(reader.getState().tailing).toBe(false);
    expect(reader.getState().lines!.end).toBeLessThan(log.size);
    reader.getState().announce(log.write("line 1001\n"));
    await settle();
    expect(log.reads.length).toBe(2);
    reader.getState().toTail();
    await settle();
    expect(reader.getState().tailing).toBe(true);
    expect(shown(reader).at(-1)).toBe("line 1001");
  });

  it("reads to the start of the log and then no further", async () => {
    const log = new MemoryLog(numberedLines(300));
    const reader = createLogReader(log, undefined, 1_024);
    reader.getState().open();
    await settle();
    while (reader.getState().lines!.before) {
      reader.getState().loadEarlier();
      await settle();
    }
    const reads = log.reads.length;
    reader.getState().loadEarlier();
    await settle();
    expect(log.reads.length).toBe(reads);
    expect(shown(reader)).toEqual(numberedLines(300).trimEnd().split("\n"));
  });

  it("starts afresh from the tail when the file was truncated or replaced", async () => {
    const log = new MemoryLog(numberedLines(50));
    const reader = createLogReader(log);
    reader.getState().open();
    await settle();
    reader.getState().announce(log.replace("fresh\n"));
    await settle();
    expect(shown(reader)).toEqual(["fresh"]);
    expect(reader.getState().lines).toMatchObject({ start: 0, end: 6, before: false });
  });

  it("takes an announcement older than the last read for what it is", async () => {
    const log = new MemoryLog("one\n");
    const reader = createLogReader(log);
    reader.getState().open();
    await settle();
    const early = log.write("two\n");
    reader.getState().announce(log.write("three\n"));
    await settle();
    reader.getState().announce(early);
    await settle();
    expect(shown(reader)).toEqual(["one", "two", "three"]);
  });

  it("says why a read failed and reads again at the next announcement", async () => {
    const log = new MemoryLog("ok\n");
    let fail = true;
    const reader = createLogReader({
      read: (offset, limit) => (fail ? Promise.reject(new Error("no such attempt")) : log.read(offset, limit)),
    });
    reader.getState().open();
    await settle();
    expect(reader.getState().error).toBe("no such attempt");
    fail = false;
    reader.getState().announce(log.size);
    await settle();
    expect(reader.getState().error).toBeNull();
    expect(shown(reader)).toEqual(["ok"]);
  });

  it("reports whether the attempt still runs", async () => {
    const log = new MemoryLog("x\n");
    const reader = createLogReader(log);
    reader.getState().open();
    await settle();
    expect(reader.getState().running).toBe(true);
    log.running = false;
    reader.getState().announce(log.write("exit 0\n"));
    await settle();
    expect(reader.getState().running).toBe(false);
  });
});
