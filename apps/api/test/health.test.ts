import request from 'supertest';
import { createApp } from '../src/app';

describe('health endpoints', () => {
  it('/health answers while the process runs', async () => {
    const res = await request(createApp()).get('/health');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ result: 'success', msg: '' });
  });

  it('/ready checks Postgres and Redis', async () => {
    const res = await request(createApp()).get('/ready');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      result: 'success',
      msg: '',
      checks: { postgres: true, redis: true },
    });
  });

  it('/ready turns 503 while draining, so the balancer stops routing here', async () => {
    const res = await request(createApp({ isDraining: () => true })).get('/ready');
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({
      result: 'error',
      msg: 'Shutting down',
      code: 'SERVER_NOT_READY',
    });
  });
});
