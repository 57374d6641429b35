// Keys held by whoever set them to a token (shard leases, upload locks): renewed or released
// only by that token's holder, so a holder that lost its key (expired while it was away, now
// someone else's) can neither keep nor free it.
import { LuaScript } from './lua';

/** KEYS[1]: the key; ARGV: the token, the new time to live (ms). 1 if renewed, 0 if not held. */
export const RENEW_IF_HELD = new LuaScript(
  'renewIfHeld',
  `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`,
);

/** KEYS[1]: the key; ARGV[1]: the token. 1 if released, 0 if not held. */
export const RELEASE_IF_HELD = new LuaScript(
  'releaseIfHeld',
  `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`,
);
