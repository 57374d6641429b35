export {
  jsonArray,
  JsonText,
  observeAnswers,
  sendError,
  sendSuccess,
  type AnswerObserver,
  type Json,
} from './envelope';
export { endpoint, type EndpointInput, type EndpointSpec } from './endpoint';
export {
  bodyParsers,
  defineRoute,
  errorHandler,
  joinWildcard,
  notFound,
  requestContext,
  runMiddleware,
  withJoinedWildcard,
  type UploadLimits,
} from './middleware';
export {
  describeIssue,
  int32,
  isStorableText,
  p,
  Param,
  parseJsonOrText,
  parseParams,
  parsePathParams,
  parseValue,
  type ParamShape,
  type ParamSources,
  type ParamValues,
} from './params';
export { healthRoutes } from './health';
export { firstSegments, onlyForItsPaths } from './router-skip';
export { serve, type ServeOptions } from './serve';
export { createExpressServer } from './express-server';
export type { DirectRoute } from './direct-route';
export { isDependencyDown } from './dependency-errors';
export {
  attachDoc,
  docOf,
  documentedRoutes,
  openApiDocument,
  openApiPath,
  recordRoute,
  successSchema,
  type DocumentedRoute,
  type EndpointDoc,
} from './openapi';
