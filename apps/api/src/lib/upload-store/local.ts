// The local backend (Zulip's LOCAL_UPLOADS_DIR): one file per path id under a directory every
// API replica shares. A path id must resolve inside the root, so no request reaches another file.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, resolve, sep } from 'node:path';
import type { Response } from 'express';
import { ResourceNotFoundError } from '@parley/errors';
import type { UploadBackend } from './backend';

export class LocalUploadBackend implements UploadBackend {
  private readonly root: string;

  constructor(directory: string) {
    this.root = resolve(directory);
  }

  /** The file of a path id, or null for one that would leave the root. */
  filePath(pathId: string): string | null {
    const file = resolve(this.root, pathId);
    return file.startsWith(this.root + sep) ? file : null;
  }

  async store(pathId: string, data: Buffer): Promise<void> {
    const file = this.filePath(pathId);
    if (!file) throw new Error(`bad upload path id ${pathId}`);
    await mkdir(dirname(file), { recursive: true });
    // 'wx': an existing file is an error, never overwritten.
    await writeFile(file, data, { flag: 'wx' });
  }

  async read(pathId: string): Promise<Buffer | null> {
    const file = this.filePath(pathId);
    if (!file) return null;
    try {
      return await readFile(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  async remove(pathId: string): Promise<void> {
    const file = this.filePath(pathId);
    if (file) await rm(file, { force: true });
  }

  /** Sent by the API process itself (express's sendFile: ranges, conditional GETs). */
  async send(res: Response, pathId: string, headers: Record<string, string>): Promise<void> {
    const file = this.filePath(pathId);
    if (!file) throw new ResourceNotFoundError('File not found');
    await new Promise<void>((done, fail) => {
      res.sendFile(file, { dotfiles: 'allow', headers }, (error?: Error & { status?: number }) => {
        if (!error) return done();
        if (error.status === 404 || (error as NodeJS.ErrnoException).code === 'ENOENT')
          return fail(new ResourceNotFoundError('File not found'));
        // The client went away mid-transfer: nothing left to answer.
        if (res.headersSent) return done();
        fail(error);
      });
    });
  }
}
