import type { TaskTypeSummary } from "../backend/generated";

/**
 * The task types whose name or description holds every word of `query` (any case); those whose
 * name holds the query come first, so Enter adds the type the user most likely means.
 */
export function matchingTypes(types: TaskTypeSummary[], query: string): TaskTypeSummary[] {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return types;
  const matches = types.filter((t) => {
    const text = `${t.name} ${t.description}`.toLowerCase();
    return words.every((w) => text.includes(w));
  });
  const q = query.trim().toLowerCase();
  const byName = matches.filter((t) => t.name.toLowerCase().includes(q));
  return [...byName, ...matches.filter((t) => !byName.includes(t))];
}
