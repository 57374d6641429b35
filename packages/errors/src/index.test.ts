import {
  BadEventQueueIdError,
  CannotDeactivateLastUserError,
  errorBody,
  InvalidSubdomainError,
  JsonableError,
  MethodNotAllowedError,
  RateLimitedError,
  RequestVariableMissingError,
  ResourceNotFoundError,
  StreamWithIDDoesNotExistError,
  UnauthorizedError,
} from './index';

describe('errorBody', () => {
  it('serializes the base error as BAD_REQUEST with HTTP 400', () => {
    const error = new JsonableError('Invalid message(s)');
    expect(errorBody(error)).toEqual({ msg: 'Invalid message(s)', code: 'BAD_REQUEST' });
    expect(error.httpStatus).toBe(400);
    expect(error.headers).toEqual({});
  });

  it('spreads the data fields next to msg and code', () => {
    expect(errorBody(new RequestVariableMissingError('queue_id'))).toEqual({
      msg: "Missing 'queue_id' argument",
      code: 'REQUEST_VARIABLE_MISSING',
      var_name: 'queue_id',
    });
    expect(errorBody(new StreamWithIDDoesNotExistError(9))).toEqual({
      msg: "Channel with ID '9' does not exist",
      code: 'STREAM_DOES_NOT_EXIST',
      stream_id: 9,
    });
    expect(errorBody(new BadEventQueueIdError('abc'))).toEqual({
      msg: 'Bad event queue ID: abc',
      code: 'BAD_EVENT_QUEUE_ID',
      queue_id: 'abc',
    });
    expect(errorBody(new CannotDeactivateLastUserError(true))).toMatchObject({
      msg: 'Cannot deactivate the only organization owner.',
      code: 'CANNOT_DEACTIVATE_LAST_USER',
      is_last_owner: true,
      entity: 'organization owner',
    });
  });

  it('keeps the data fields from overriding msg and code', () => {
    class Tricky extends JsonableError {
      override readonly data = { msg: 'spoofed', code: 'SPOOFED' };
    }
    expect(errorBody(new Tricky('real'))).toEqual({ msg: 'real', code: 'BAD_REQUEST' });
  });
});

describe('statuses and headers', () => {
  it('challenges Basic authentication on 401', () => {
    const error = new UnauthorizedError();
    expect(error.httpStatus).toBe(401);
    expect(error.code).toBe('UNAUTHORIZED');
    expect(error.headers).toEqual({ 'WWW-Authenticate': 'Basic realm="zulip"' });
    expect(error.message).toBe('Not logged in: API authentication or user session required');
  });

  it('answers rate limits with 429, retry-after and a Retry-After header', () => {
    const error = new RateLimitedError(28.7);
    expect(error.httpStatus).toBe(429);
    expect(errorBody(error)).toEqual({
      msg: 'API usage exceeded rate limit',
      code: 'RATE_LIMIT_HIT',
      'retry-after': 28.7,
    });
    expect(error.headers).toEqual({ 'Retry-After': '29' });
  });

  it('uses 404 for unknown subdomains and missing resources', () => {
    expect(new InvalidSubdomainError().httpStatus).toBe(404);
    expect(errorBody(new InvalidSubdomainError())).toEqual({
      msg: 'Invalid subdomain',
      code: 'NONEXISTENT_SUBDOMAIN',
    });
    const missing = new ResourceNotFoundError('Draft does not exist');
    expect([missing.httpStatus, missing.code]).toEqual([404, 'BAD_REQUEST']);
  });

  it('lists the allowed methods on 405', () => {
    const error = new MethodNotAllowedError(['GET', 'POST']);
    expect(error.httpStatus).toBe(405);
    expect(errorBody(error)).toEqual({
      msg: 'Method Not Allowed',
      code: 'BAD_REQUEST',
      allowed_methods: ['GET', 'POST'],
    });
    expect(error.headers).toEqual({ Allow: 'GET, POST' });
  });
});
