import express from 'express';
import request from 'supertest';
import { healthRoutes } from './health';

function app(checks: Record<string, () => Promise<boolean>>, draining = false) {
  return express().use(healthRoutes(checks, () => draining));
}

describe('health routes', () => {
  it('/ready answers 503 naming the dependency that does not answer', async () => {
    const res = await request(app({ postgres: async () => true, redis: async () => false })).get(
      '/ready',
    );
    expect(res.status).toBe(503);
    expect(res.body).toEqual({
      result: 'error',
      msg: 'Dependencies unavailable',
      code: 'SERVER_NOT_READY',
      checks: { postgres: true, redis: false },
    });
  });

  it('/health stays 200 while a dependency is down (the process itself is alive)', async () => {
    const res = await request(app({ redis: async () => false })).get('/health');
    expect(res.status).toBe(200);
  });

  it('/ready answers 503 while draining even when everything answers', async () => {
    const res = await request(app({ redis: async () => true }, true)).get('/ready');
    expect(res.status).toBe(503);
    expect(res.body.msg).toBe('Shutting down');
  });

  it('/ready counts a dependency that does not answer within a second as down', async () => {
    const hanging = () => new Promise<boolean>(() => undefined);
    const res = await request(app({ redis: hanging })).get('/ready');
    expect(res.status).toBe(503);
    expect(res.body.checks).toEqual({ redis: false });
  });
});
