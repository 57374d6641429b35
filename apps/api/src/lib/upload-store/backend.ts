// What a storage backend of uploaded bytes does (lib/upload-store picks one by configuration).
// Both backends behave the same for every caller: see docs/storage.md.
import type { Response } from 'express';

export interface UploadBackend {
  /** Stores a new object; an existing one is an error, never overwritten. */
  store(pathId: string, data: Buffer, contentType?: string): Promise<void>;
  /** The stored bytes, or null when there are none. */
  read(pathId: string): Promise<Buffer | null>;
  /** Deletes the object; one already gone is fine. */
  remove(pathId: string): Promise<void>;
  /** Answers a GET with the object and `headers` (the caller checked access); throws
   * ResourceNotFoundError when it is missing. */
  send(res: Response, pathId: string, headers: Record<string, string>): Promise<void>;
}
