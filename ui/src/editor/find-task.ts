// Finding a task by what the user remembers of it: part of its id, or of its type.
import type { Task } from "../blueprint";

/**
 * The tasks whose id or type holds every word of `query` (any case), at most `limit` of them:
 * those whose id starts with the query first, then the others in blueprint order. An empty
 * query finds every task.
 */
export function matchingTasks(tasks: Task[], query: string, limit: number): Task[] {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  const q = query.trim().toLowerCase();
  const first: Task[] = [];
  const rest: Task[] = [];
  for (const task of tasks) {
    const text = `${task.id} ${task.type}`.toLowerCase();
    if (!words.every((w) => text.includes(w))) continue;
    (task.id.toLowerCase().startsWith(q) ? first : rest).push(task);
    // Enough found that start with the query: the rest could not come before them.
    if (first.length >= limit) break;
  }
  return [...first, ...rest].slice(0, limit);
}
