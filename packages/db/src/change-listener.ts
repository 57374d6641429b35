// A LISTEN connection for cache invalidation. NOTIFY is transactional: PostgreSQL delivers a
// notification only when the transaction that sent it commits. A connection that drops may
// have missed some, so `onLost` runs first (drop every cache entry) and caching resumes only
// once it listens again. A connection that stops answering without dropping (a half-open TCP
// connection) is caught by a heartbeat query.
import pg from 'pg';
import { getLogger } from '@parley/logger';

export interface ChangeHandlers {
  onNotify(payload: string): void;
  /** Notifications may have been missed: forget everything they would have invalidated. */
  onLost(): void;
  /** Notifications arrive from now on; anything read before may predate a missed one. */
  onListening?(): void;
}

const RETRY_MS = 1000;
const HEARTBEAT_MS = 15_000;
const HEARTBEAT_TIMEOUT_MS = 5000;

export class ChangeListener {
  private client: pg.Client | undefined;
  private retry: NodeJS.Timeout | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private stopped = false;
  private listening = false;
  private failing = false;

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
    clearInterval(this.heartbeat);
    this.lost();
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.databaseUrl,
      connectionTimeoutMillis: 2000,
      keepAlive: true,
    });
    this.client = client;
    client.on('notification', (message) => {
      if (message.channel === this.channel) this.handlers.onNotify(message.payload ?? '');
    });
    const reconnect = (error?: unknown) => {
      if (this.client !== client) return;
      this.client = undefined;
      clearInterval(this.heartbeat);
      this.lost();
      client.end().catch(() => undefined);
      if (this.stopped) return;
      // One line per outage, not one per attempt.
      if (!this.failing) getLogger().warn('change listener lost its connection', { error });
      this.failing = true;
      this.retry = setTimeout(() => void this.connect(), RETRY_MS);
    };
    client.on('error', reconnect);
    client.on('end', () => reconnect());
    try {
      await client.connect();
      await client.query(`LISTEN ${pg.escapeIdentifier(this.channel)}`);
      if (this.client !== client || this.stopped) return;
      this.listening = true;
      if (this.failing) getLogger().info('change listener listening again');
      this.failing = false;
      this.handlers.onListening?.();
      this.heartbeat = setInterval(() => {
        client
          .query({ text: 'SELECT 1', query_timeout: HEARTBEAT_TIMEOUT_MS } as pg.QueryConfig)
          .catch(reconnect);
      }, HEARTBEAT_MS);
      this.heartbeat.unref();
    } catch (error) {
      reconnect(error);
    }
  }

  private lost(): void {
    this.listening = false;
    this.handlers.onLost();
  }
}
