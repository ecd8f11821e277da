// Parsing JSON text that may not be JSON (error bodies, stored annotations): the value, or
// undefined, for a schema to judge next.

export function parseJsonOrUndefined(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
