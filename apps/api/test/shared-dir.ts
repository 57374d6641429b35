// Where the workplace's shared material (../shared: Zulip's OpenAPI description, its Python
// client library) is, for the tests that read it. Beside the checkout normally; a clone made
// elsewhere (a CI worktree) finds it through PARLEY_SHARED_DIR, an ancestor directory, or the
// workplace's fixed location.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { repoRoot } from '@parley/devservices';

const WORKPLACE_SHARED = '/work/shared';

/** The first candidate holding `relative`, else the conventional ../shared path (so the
 * caller's error names where it looked first). */
export function sharedPath(...relative: string[]): string {
  const candidates: string[] = [];
  if (process.env.PARLEY_SHARED_DIR) candidates.push(process.env.PARLEY_SHARED_DIR);
  for (let dir = dirname(repoRoot()); ; dir = dirname(dir)) {
    candidates.push(join(dir, 'shared'));
    if (dirname(dir) === dir) break;
  }
  candidates.push(WORKPLACE_SHARED);
  const found = candidates.find((dir) => existsSync(join(dir, ...relative)));
  return join(found ?? candidates[0]!, ...relative);
}
