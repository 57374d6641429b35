// What an in-process cache of rarely changing rows (the auth cache, linkifiers) learns about
// their changes: every process at commit, by NOTIFY on one channel (the triggers of
// migrations 20261123030000 and 20261124050000 send "table:id"), and the committing process
// at once, before its next request (runAction's committed changes). A cache answers from
// memory only while the feed listens, and stores a value only if its `generation` did not
// move while the value was read: the read may predate a change.
import { onCommittedAuthChanges } from './action';
import { ChangeListener } from './change-listener';

export const CACHE_CHANGE_CHANNEL = 'parley_auth_change';

export interface ChangeFeedHandlers {
  /** A change ("table:id"); returns whether it concerned this cache (then reads that began
   * before it are not stored). */
  onChange(change: string): boolean;
  /** Notifications may have been missed: forget everything. */
  onLost(): void;
}

export class ChangeFeed {
  private current = 0;
  private readonly listener: ChangeListener;
  private readonly forgetLocalChanges: () => void;

  constructor(databaseUrl: string, handlers: ChangeFeedHandlers) {
    const changed = (change: string) => {
      if (handlers.onChange(change)) this.current++;
    };
    this.listener = new ChangeListener(databaseUrl, CACHE_CHANGE_CHANNEL, {
      onNotify: changed,
      onLost: () => {
        this.current++;
        handlers.onLost();
      },
      // A read that started before listening may predate a change nobody told us about.
      onListening: () => this.current++,
    });
    this.listener.start();
    this.forgetLocalChanges = onCommittedAuthChanges((changes) => changes.forEach(changed));
  }

  /** Moves with every change that concerned the cache, and with every loss of the feed. */
  get generation(): number {
    return this.current;
  }

  get isListening(): boolean {
    return this.listener.isListening;
  }

  /** Resolves once the feed listens (or after `timeoutMs`, to whatever state). */
  listening(timeoutMs?: number): Promise<boolean> {
    return this.listener.waitUntilListening(timeoutMs);
  }

  async stop(): Promise<void> {
    this.forgetLocalChanges();
    await this.listener.stop();
  }
}
