// Waiting in tests for work done in the background (a job, a delivery, a sweep): the check is
// asked again every 50 ms. No side effects on import, so any test may use it.

/** Returns the first truthy value `check` gives; fails after `seconds` naming `what`. */
export async function until<T>(
  check: () => Promise<T | undefined | null | false>,
  what = 'condition',
  seconds = 30,
): Promise<T> {
  for (let attempt = 0; attempt < seconds * 20; attempt += 1) {
    const value = await check();
    if (value) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}
