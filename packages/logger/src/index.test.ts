import { Writable } from 'node:stream';
import winston from 'winston';
import { createLogger, serializeError } from './index';

describe('logged errors', () => {
  it('keep their message, stack, code and cause when given as a field', () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'info', format: 'json' });
    logger.clear();
    logger.add(
      new winston.transports.Stream({
        stream: new Writable({
          write(chunk: Buffer, _encoding, done) {
            lines.push(chunk.toString());
            done();
          },
        }),
      }),
    );
    const cause = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), {
      code: 'ECONNREFUSED',
    });
    logger.error('publish failed', { error: new Error('after-commit callback failed', { cause }) });
    const logged = JSON.parse(lines[0]!) as { error: Record<string, unknown> };
    expect(logged.error).toMatchObject({
      name: 'Error',
      message: 'after-commit callback failed',
      stack: expect.stringContaining('index.test.ts') as string,
      cause: { message: 'connect ECONNREFUSED 127.0.0.1:6379', code: 'ECONNREFUSED' },
    });
  });

  it('serializes aggregate errors and leaves other values alone', () => {
    const aggregate = new AggregateError([new Error('a'), new Error('b')], 'both failed');
    expect(serializeError(aggregate)).toMatchObject({
      message: 'both failed',
      errors: [{ message: 'a' }, { message: 'b' }],
    });
    expect(serializeError('text')).toBe('text');
  });
});
