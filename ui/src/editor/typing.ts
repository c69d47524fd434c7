// Whether the user is typing in a text field: the editor's own keys (select all, copy, paste...)
// then leave the field its usual meaning.

export function isTyping(element: Element | null): boolean {
  if (!(element instanceof HTMLElement)) return false;
  if (element.isContentEditable) return true;
  if (element instanceof HTMLTextAreaElement || element instanceof HTMLSelectElement) return true;
  if (!(element instanceof HTMLInputElement)) return false;
  // Buttons and boxes take no text: Ctrl+A on a checkbox still selects the tasks.
  return !["button", "checkbox", "radio", "range", "color", "file", "submit", "reset", "image"].includes(element.type);
}
