// onlyForItsPaths: a router passed over must be one Express would have found no route in.
import express, { Router, type RequestHandler } from 'express';
import request from 'supertest';
import { firstSegment, firstSegments, onlyForItsPaths } from './router-skip';

const answer =
  (name: string): RequestHandler =>
  (_req, res) =>
    void res.json({ by: name });

describe('firstSegment', () => {
  it('is the text between the leading slash and the next slash or query string', () => {
    expect(firstSegment('/messages')).toBe('messages');
    expect(firstSegment('/messages/12/reactions')).toBe('messages');
    expect(firstSegment('/messages?anchor=newest')).toBe('messages');
    expect(firstSegment('/')).toBe('');
    expect(firstSegment('')).toBe('');
  });
});

describe('firstSegments', () => {
  it("lists a router's literal first segments, lower-cased", () => {
    const router = Router();
    router.get('/users/me', answer('me'));
    router.route('/Users/:id').get(answer('user'));
    router.post('/fetch_api_key', answer('key'));
    expect(firstSegments(router)).toEqual(new Set(['users', 'fetch_api_key']));
  });

  it.each([
    ['middleware', (router: Router) => void router.use(answer('any'))],
    ['mounted middleware', (router: Router) => void router.use('/calls', answer('calls'))],
    ['a parameter first', (router: Router) => void router.get('/:id', answer('id'))],
    ['a wildcard first', (router: Router) => void router.get('/*path', answer('path'))],
    ['an optional group first', (router: Router) => void router.get('{/x}/y', answer('y'))],
    ['a regular expression', (router: Router) => void router.get(/^\/re/, answer('re'))],
    ['a list of paths', (router: Router) => void router.get(['/a', '/b'], answer('ab'))],
  ])('cannot tell for a router with %s', (_what, define) => {
    const router = Router();
    router.get('/users', answer('users'));
    define(router);
    expect(firstSegments(router)).toBeNull();
  });
});

describe('onlyForItsPaths', () => {
  /** Three routers in order, as the API mounts its resources. */
  function app(): express.Express {
    const users = Router();
    users.get('/users/me', answer('users'));
    users.get('/users/me/subscriptions/muted_topics', answer('users'));
    const subscriptions = Router();
    subscriptions.get('/users/me/subscriptions/:id', answer('subscriptions'));
    const anything = Router();
    anything.use((req, res, next) =>
      req.query.any === undefined ? next() : answer('any')(req, res, next),
    );
    const messages = Router();
    messages.get('/messages/:id', answer('messages'));
    messages.all('/messages/:id', (_req, res) => void res.status(405).json({ by: 'refused' }));
    const v1 = Router();
    v1.use(...[users, subscriptions, anything, messages].map(onlyForItsPaths));
    const result = express();
    result.use('/base', v1);
    result.use((_req, res) => void res.status(404).json({ by: 'nobody' }));
    return result;
  }

  it.each([
    ['/base/messages/12', 200, 'messages'],
    ['/base/MESSAGES/12', 200, 'messages'],
    ['/base/messages/12/', 200, 'messages'],
    ['/base/messages/12?anchor=newest', 200, 'messages'],
    // The first router that has the route answers, as without skipping.
    ['/base/users/me/subscriptions/muted_topics', 200, 'users'],
    ['/base/users/me/subscriptions/7', 200, 'subscriptions'],
    // Middleware is never passed over.
    ['/base/streams?any=1', 200, 'any'],
    ['/base/streams', 404, 'nobody'],
    ['/base/messagesx/12', 404, 'nobody'],
    ['/base/', 404, 'nobody'],
  ])('GET %s is answered %i by %s', async (path, status, by) => {
    const response = await request(app()).get(path);
    expect(response.status).toBe(status);
    expect(response.body).toEqual({ by });
  });

  it("reaches a router's other methods too", async () => {
    const response = await request(app()).post('/base/messages/12');
    expect(response.status).toBe(405);
    expect(response.body).toEqual({ by: 'refused' });
  });
});
