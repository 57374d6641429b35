// runAction against the real database: callbacks run after commit, never after a rollback.
import { randomBytes } from 'node:crypto';
import { runAction } from './action';
import { getPrisma } from './client';

const subdomain = () => `act${randomBytes(5).toString('hex')}`;

describe('runAction', () => {
  it('runs onCommit callbacks after the transaction committed, in order', async () => {
    const stringId = subdomain();
    const seen: string[] = [];
    await runAction(async ({ tx, onCommit }) => {
      await tx.realm.create({ data: { stringId, name: 'Committed' } });
      onCommit(async () => {
        // Visible from outside the transaction: it has committed.
        const found = await getPrisma().realm.findUnique({ where: { stringId } });
        seen.push(found ? 'first:committed' : 'first:missing');
      });
      onCommit(() => {
        seen.push('second');
      });
      seen.push('inside');
    });
    expect(seen).toEqual(['inside', 'first:committed', 'second']);
  });

  it('drops the callbacks and the writes when the action throws', async () => {
    const stringId = subdomain();
    const callback = jest.fn();
    await expect(
      runAction(async ({ tx, onCommit }) => {
        await tx.realm.create({ data: { stringId, name: 'Rolled back' } });
        onCommit(callback);
        throw new Error('validation failed late');
      }),
    ).rejects.toThrow('validation failed late');
    expect(callback).not.toHaveBeenCalled();
    expect(await getPrisma().realm.findUnique({ where: { stringId } })).toBeNull();
  });

  it('returns the result even when a callback fails (the data is committed)', async () => {
    const stringId = subdomain();
    const result = await runAction(async ({ tx, onCommit }) => {
      onCommit(() => {
        throw new Error('redis down');
      });
      return tx.realm.create({ data: { stringId, name: 'Kept' } });
    });
    expect(result.stringId).toBe(stringId);
    expect(await getPrisma().realm.findUnique({ where: { stringId } })).not.toBeNull();
  });
});
