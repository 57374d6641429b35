// The node environment, with one addition: the shared connections a test file opened
// (test/after-env.ts registers how to close them) close after every one of the file's own
// afterAll hooks. Jest runs a root block's afterAll hooks in declaration order, so a hook
// declared in the setup file runs before the file's own: it closed the database pool and Redis
// while a file's BullMQ workers were still finishing a job, and once waited on them past the
// hook timeout.
import { TestEnvironment } from 'jest-environment-node';

/** How long closing may take before the file fails rather than the run hanging. */
const CLOSE_LIMIT_MS = 30_000;

export default class ParleyTestEnvironment extends TestEnvironment {
  async handleTestEvent(
    event: { name: string },
    state: { unhandledErrors: unknown[] },
  ): Promise<void> {
    if (event.name !== 'run_finish') return;
    const close = this.global.closeSharedConnections as (() => Promise<void>) | undefined;
    if (!close) return;
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`shared connections still open after ${CLOSE_LIMIT_MS} ms`)),
        CLOSE_LIMIT_MS,
      );
    });
    try {
      await Promise.race([close(), limit]);
    } catch (error) {
      // Fails the file with its tests' results kept (a thrown error would discard them).
      state.unhandledErrors.push(error);
    } finally {
      clearTimeout(timer);
    }
  }
}
