// File paths as the shell gives them (POSIX or Windows): only what the UI needs to show and group them.

/** The folder of a file path, `/` or `\` separated. */
export function folderOf(path: string): string {
  const cut = Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\"));
  if (cut < 0) return ".";
  // The root keeps its separator: "/" and "C:\", not "" and "C:".
  const root = cut === 0 || /^[A-Za-z]:$/.test(path.slice(0, cut));
  return path.slice(0, root ? cut + 1 : cut);
}

/** The last part of a file path. */
export function fileName(path: string): string {
  return path.slice(Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\")) + 1);
}
