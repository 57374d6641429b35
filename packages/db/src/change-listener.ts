// A LISTEN connection for cache invalidation. NOTIFY is transactional: PostgreSQL delivers a
// notification only when the transaction that sent it commits. A connection that drops may
// have missed some, so `onLost` runs first (drop every cache entry) and caching resumes only
// once it listens again.
import pg from 'pg';
import { getLogger } from '@parley/logger';

export interface ChangeHandlers {
  onNotify(payload: string): void;
  /** Notifications may have been missed: forget everything they would have invalidated. */
  onLost(): void;
}

const RETRY_MS = 1000;

export class ChangeListener {
  private client: pg.Client | undefined;
  private retry: NodeJS.Timeout | undefined;
  private stopped = false;
  private listening = false;

  constructor(
    private readonly databaseUrl: string,
    private readonly channel: string,
    private readonly handlers: ChangeHandlers,
  ) {}

  /** True while notifications arrive: only then may a cache answer from memory. */
  get isListening(): boolean {
    return this.listening;
  }

  /** Resolves once notifications arrive (or after `timeoutMs`, to whatever state). */
  async waitUntilListening(timeoutMs = 5000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!this.listening && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 10));
    return this.listening;
  }

  start(): void {
    this.stopped = false;
    void this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    this.lost();
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.databaseUrl,
      connectionTimeoutMillis: 2000,
    });
    this.client = client;
    client.on('notification', (message) => {
      if (message.channel === this.channel) this.handlers.onNotify(message.payload ?? '');
    });
    const reconnect = (error?: unknown) => {
      if (this.client !== client) return;
      this.client = undefined;
      this.lost();
      client.end().catch(() => undefined);
      if (this.stopped) return;
      if (error) getLogger().warn('change listener lost its connection', { error });
      this.retry = setTimeout(() => void this.connect(), RETRY_MS);
    };
    client.on('error', reconnect);
    client.on('end', () => reconnect());
    try {
      await client.connect();
      await client.query(`LISTEN ${pg.escapeIdentifier(this.channel)}`);
      if (this.client === client && !this.stopped) this.listening = true;
    } catch (error) {
      reconnect(error);
    }
  }

  private lost(): void {
    this.listening = false;
    this.handlers.onLost();
  }
}
