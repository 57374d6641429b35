import request from 'supertest';
import { createApp } from '../src/app';

describe('events tier', () => {
  it('/health answers while the process runs', async () => {
    const res = await request(createApp()).get('/health');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ result: 'success', msg: '' });
  });

  it('/ready checks Redis, its only dependency', async () => {
    const res = await request(createApp()).get('/ready');
    expect(res.status).toBe(200);
    expect(res.body.checks).toEqual({ redis: true });
  });

  it('answers unknown routes with 404 JSON', async () => {
    const res = await request(createApp()).get('/api/v1/nothing');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      result: 'error',
      msg: 'Endpoint does not exist',
      code: 'BAD_REQUEST',
    });
  });
});
