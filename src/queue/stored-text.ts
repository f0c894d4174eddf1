import { decodePayload, type Json } from '../core/codec.js';
import type { UndecodedText } from './job.js';

/** A stored JSON text decoded; text that is not JSON (another runtime wrote it) is kept raw, with why. */
export function decodeStored<T>(text: string | undefined): { value?: T; error?: UndecodedText } {
  try {
    return { value: decodePayload<T>(text) };
  } catch (err) {
    return { error: { code: 'EMQ_BAD_PAYLOAD', message: `stored text is not JSON: ${(err as Error).message}`, raw: text ?? '' } };
  }
}

/** A row's checkpoint, progress and log (`progress.lua`), decoded; text that is not JSON is left out. */
export function rowWrites(row: Record<string, string>): { progress?: Json; checkpoint?: Json; logs: string[] } {
  const logs = decodeStored<unknown>(row.log).value;
  return {
    progress: decodeStored<Json>(row.progress).value,
    checkpoint: decodeStored<Json>(row.ckpt).value,
    logs: Array.isArray(logs) ? logs.filter((l): l is string => typeof l === 'string') : [],
  };
}
