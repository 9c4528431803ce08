/** The world's files (never the host's). */

import * as raw from "worldline:agent/files@0.1.0";
import { Failed, hostCall } from "./errors";

/** The bytes of a world file. */
export function read(path: string): Uint8Array {
  return hostCall(() => raw.read(path));
}

/** A world file as UTF-8 text. */
export function readText(path: string): string {
  const data = read(path);
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(data);
  } catch (e) {
    throw new Failed(`${path}: not UTF-8 text (${(e as Error).message})`);
  }
}

/** Write a world file (text is written as UTF-8). */
export function write(path: string, data: Uint8Array | string): void {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  hostCall(() => raw.write(path, bytes));
}

/** The world's file paths that start with `prefix`. */
export function paths(prefix = ""): string[] {
  return hostCall(() => raw.paths(prefix));
}
