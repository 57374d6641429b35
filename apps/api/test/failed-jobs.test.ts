// Failed jobs stay visible: a job whose run throws ends in its queue's failed set once its
// attempts are used up, listed by listFailedJobs and `pnpm manage failed-jobs`, and can be
// queued again or removed. The failing job is one no worker can run (a name no handler has),
// so it fails the same way whichever worker of the test run takes it.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Queue } from 'bullmq';
import { getConfig } from '@parley/config';
import {
  closeQueues,
  listFailedJobs,
  QUEUE_NAMES,
  removeFailedJob,
  retryFailedJob,
  startJobWorkers,
  type FailedJob,
  type JobWorkers,
} from '@parley/jobs';
import { JOB_HANDLERS } from '../../worker/src/jobs';
import { until } from './until';

const run = promisify(execFile);
const root = join(__dirname, '..', '..', '..');
const tsx = join(root, 'node_modules', '.bin', 'tsx');
const cli = join(root, 'apps', 'api', 'src', 'cli', 'manage.ts');

let workers: JobWorkers;
let queue: Queue;

beforeAll(async () => {
  workers = startJobWorkers(JOB_HANDLERS, { concurrency: 1 });
  await workers.ready();
  queue = new Queue('maintenance', { connection: { url: getConfig().REDIS_URL } });
});

afterAll(async () => {
  await workers.close();
  await queue.close();
  await closeQueues();
});

/** Adds a job that fails on every run; resolves once it has failed `attempts` times. */
async function failingJob(): Promise<{ id: string; marker: string }> {
  const marker = randomBytes(6).toString('hex');
  const id = `test-failing-${marker}`;
  await queue.add(
    'no-such-job',
    { marker },
    {
      jobId: id,
      attempts: 1,
      removeOnFail: { age: 24 * 3600 },
    },
  );
  await until(async () => (await failedWith(id))?.attemptsMade === 1);
  return { id, marker };
}

async function failedWith(id: string): Promise<FailedJob | undefined> {
  const { jobs } = await listFailedJobs({ queues: ['maintenance'], limit: 10_000 });
  return jobs.find((job) => job.id === id);
}

async function manage(...args: string[]): Promise<{ code: number; stdout: string }> {
  try {
    const { stdout } = await run(tsx, [cli, ...args], { cwd: root, env: process.env });
    return { code: 0, stdout };
  } catch (error) {
    const failed = error as { code: number; stdout: string };
    return { code: failed.code, stdout: failed.stdout };
  }
}

describe('failed jobs', () => {
  it('are kept and listed with their queue, name, attempts, reason and data', async () => {
    const { id, marker } = await failingJob();
    const job = await failedWith(id);
    expect(job).toEqual({
      queue: 'maintenance',
      name: 'no-such-job',
      id,
      attemptsMade: 1,
      attempts: 1,
      failedReason: 'job no-such-job is not for maintenance',
      finishedOn: expect.any(Number),
      createdOn: expect.any(Number),
      data: { marker },
    });
    const all = await listFailedJobs({ limit: 10_000 });
    expect(all.jobs.map((j) => j.id)).toContain(id);
    expect(Object.keys(all.counts).sort()).toEqual(expect.arrayContaining(['mail', 'maintenance']));
    expect(all.counts.maintenance).toBeGreaterThanOrEqual(1);
  });

  it('can be queued again, and a job failing again goes back to the failed set', async () => {
    const { id } = await failingJob();
    const retried = await retryFailedJob(id);
    expect(retried).toMatchObject({ queue: 'maintenance', id, attemptsMade: 1 });
    await until(async () => (await failedWith(id))?.attemptsMade === 2);
    await expect(retryFailedJob('test-failing-none')).rejects.toThrow(
      "No failed job with id 'test-failing-none'",
    );
  });

  it('can be removed', async () => {
    const { id } = await failingJob();
    await removeFailedJob(id, ['maintenance']);
    expect(await failedWith(id)).toBeUndefined();
    expect(await queue.getJob(id)).toBeUndefined();
  });

  it('are listed and queued again by `pnpm manage failed-jobs`', async () => {
    const { id, marker } = await failingJob();
    const listed = await manage(
      'failed-jobs',
      '--queue',
      'maintenance',
      '--limit',
      '9999',
      '--json',
    );
    expect(listed.code).toBe(0);
    const body = JSON.parse(listed.stdout) as {
      counts: Record<string, number>;
      jobs: Record<string, unknown>[];
    };
    expect(Object.keys(body.counts)).toEqual(['maintenance']);
    expect(body.jobs).toContainEqual({
      queue: 'maintenance',
      name: 'no-such-job',
      id,
      attempts_made: 1,
      attempts: 1,
      failed_reason: 'job no-such-job is not for maintenance',
      finished_time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      created_time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      data: { marker },
    });

    const retried = await manage('failed-jobs', '--retry', id, '--json');
    expect(retried.code).toBe(0);
    expect(JSON.parse(retried.stdout)).toMatchObject({ retried: { id, queue: 'maintenance' } });
    await until(async () => (await failedWith(id))?.attemptsMade === 2);

    const unknown = await manage('failed-jobs', '--queue', 'nope', '--json');
    expect(unknown.code).toBe(1);
    expect(JSON.parse(unknown.stdout)).toEqual({
      result: 'error',
      msg: `Unknown queue 'nope' (queues: ${QUEUE_NAMES.join(', ')})`,
    });
  });
});
