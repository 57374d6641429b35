import request from 'supertest';
import { createApp, startEventsService, type EventsService } from '../src/app';

let service: EventsService;
beforeAll(async () => {
  service = await startEventsService({ fanout: false });
});
afterAll(async () => {
  await service.stop();
});

describe('events tier', () => {
  it('/health answers while the process runs', async () => {
    const res = await request(createApp(service)).get('/health');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ result: 'success', msg: '' });
  });

  it('/ready checks Redis and the database it authenticates against', async () => {
    const res = await request(createApp(service)).get('/ready');
    expect(res.status).toBe(200);
    expect(res.body.checks).toEqual({ postgres: true, redis: true });
  });

  it('answers unknown routes with 404 JSON', async () => {
    const res = await request(createApp(service)).get('/api/v1/nothing');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      result: 'error',
      msg: 'Endpoint does not exist',
      code: 'BAD_REQUEST',
    });
  });
});
