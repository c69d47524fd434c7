// How a run is named in a few characters: session ids are UUID v7, whose first characters are a
// timestamp (alike from run to run) and whose last 8 are random.
export function shortRunId(id: string): string {
  return id.slice(-8);
}
