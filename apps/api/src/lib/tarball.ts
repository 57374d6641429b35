// A gzipped tarball written entry by entry: each file goes into the archive as soon as it is
// added, so only the compressed output accumulates (a data export adds every uploaded file of
// an organization), and its SHA-256 is computed as the output comes, not over the whole.
import { createHash } from 'node:crypto';
import { createGzip } from 'node:zlib';
import { pack as tarPack } from 'tar-stream';

export class GzippedTarball {
  private readonly archive = tarPack();
  private readonly chunks: Buffer[] = [];
  private readonly hash = createHash('sha256');
  private readonly done: Promise<void>;
  private readonly mtime = new Date();

  /** Entries go under the directory `root`. */
  constructor(private readonly root: string) {
    const gzip = createGzip();
    this.done = new Promise<void>((resolve, reject) => {
      gzip.on('data', (chunk: Buffer) => {
        this.chunks.push(chunk);
        this.hash.update(chunk);
      });
      gzip.on('end', resolve);
      gzip.on('error', reject);
      this.archive.on('error', reject);
    });
    // A build abandoned before finish() must not leave this rejection unobserved (it would
    // end the worker's process); finish() still sees it.
    this.done.catch(() => undefined);
    this.archive.pipe(gzip);
  }

  async add(path: string, data: Buffer): Promise<void> {
    await new Promise<void>((resolve, reject) =>
      this.archive.entry(
        { name: `${this.root}/${path}`, mtime: this.mtime, mode: 0o644 },
        data,
        (error) => (error ? reject(error) : resolve()),
      ),
    );
  }

  /** Ends the archive: its bytes and their SHA-256 (hexadecimal). */
  async finish(): Promise<{ bytes: Buffer; sha256: string }> {
    this.archive.finalize();
    await this.done;
    return { bytes: Buffer.concat(this.chunks), sha256: this.hash.digest('hex') };
  }
}
