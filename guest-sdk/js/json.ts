/** JSON as the host records it: keys sorted, no spaces, so equal values are equal text. */

export function canonical(value: unknown): string {
  return JSON.stringify(sortKeys(value, new Set()));
}

/**
 * `value` with every object's keys sorted. A value that holds itself is
 * refused as `JSON.stringify` refuses it (the walk went round it until the
 * run's fuel ran out).
 */
function sortKeys(value: unknown, within: Set<object>): unknown {
  if (value === null || typeof value !== "object" || value instanceof Uint8Array) return value;
  if (within.has(value)) throw new TypeError("Converting circular structure to JSON");
  within.add(value);
  try {
    if (Array.isArray(value)) return value.map((v) => sortKeys(v, within));
    const toJSON = (value as { toJSON?: () => unknown }).toJSON;
    if (typeof toJSON === "function") return sortKeys(toJSON.call(value), within);
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      out[key] = sortKeys((value as Record<string, unknown>)[key], within);
    }
    return out;
  } finally {
    within.delete(value);
  }
}
