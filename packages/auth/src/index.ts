// Who is asking, for both tiers: the organization of the Host header and the user of the HTTP
// Basic credentials.
export { authenticate, validateApiKey } from './basic';
export { authCache, startedAuthCache, stopAuthCache } from './auth-cache';
export {
  isEmailDomain,
  realmBotDomain,
  realmEmailDomain,
  realmHost,
  realmUrl,
  resolveRealm,
  subdomainFromHost,
} from './realm';
export {
  anonymousEndpoint,
  realmEndpoint,
  userEndpoint,
  type UserEndpointInput,
  type UserEndpointOptions,
} from './endpoint';
export {
  checkLoginRateLimit,
  clearFailedLogins,
  rateLimitEmailChange,
  rateLimitEmailMirror,
  rateLimitIp,
  rateLimitUser,
  recordFailedLogin,
} from './rate-limits';
