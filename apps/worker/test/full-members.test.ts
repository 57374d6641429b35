// The periodic promotion to full members (Zulip's promote_new_full_members): a worker
// declares its schedule, and the job, run by a real BullMQ worker, moves members whose
// waiting period has passed into role:fullmembers and tells the organization once.
import { getPrisma, Role } from '@parley/db';
import { closeQueues, enqueueJob, repeatingJobSchedule, type JobWorkers } from '@parley/jobs';
import { promoteFullMembers } from '@parley/api/actions/realm-settings';
import {
  as,
  captureEvents,
  createTestRealm,
  createTestUser,
  expectSuccess,
  type TestRealm,
} from '../../api/test/helpers';
import { FULL_MEMBER_PROMOTION_EVERY_MS, startWorkers } from '../src/jobs';
import { until } from '../../api/test/until';

const prisma = () => getPrisma();
let workers: JobWorkers;

beforeAll(async () => {
  workers = startWorkers({ concurrency: 1, sweepIntervalMs: 60_000 });
  await workers.ready();
});

afterAll(async () => {
  await workers.close();
  await closeQueues();
});

async function fullMembersOf(org: TestRealm): Promise<number[]> {
  const group = await prisma().userGroup.findFirstOrThrow({
    where: { realmId: org.realm.id, name: 'role:fullmembers' },
    include: { members: true },
  });
  return group.members.map((member) => member.userId).sort((a, b) => a - b);
}

describe('promotion to full members', () => {
  it('is scheduled by the workers', async () => {
    const schedule = await until(() => repeatingJobSchedule('promote-full-members'));
    expect(schedule.every).toBe(FULL_MEMBER_PROMOTION_EVERY_MS);
  });

  it('promotes members whose waiting period has passed, once', async () => {
    const org = await createTestRealm();
    expectSuccess(await as(org.owner, org.host).patch('/realm', { waiting_period_threshold: 3 }));
    const newcomer = await createTestUser(org.realm, Role.MEMBER);
    const recent = await createTestUser(org.realm, Role.MEMBER);
    expect(await fullMembersOf(org)).not.toContain(newcomer.id);
    // Four days pass for the newcomer, one for the other.
    const daysAgo = (days: number) => new Date(Date.now() - days * 24 * 3600 * 1000);
    await prisma().user.update({ where: { id: newcomer.id }, data: { dateJoined: daysAgo(4) } });
    await prisma().user.update({ where: { id: recent.id }, data: { dateJoined: daysAgo(1) } });

    const published = await captureEvents(org.realm.id, async () => {
      await enqueueJob('promote-full-members', {}, `test-promotion-${org.realm.id}`);
      await until(async () => (await fullMembersOf(org)).includes(newcomer.id));
    });
    expect(await fullMembersOf(org)).not.toContain(recent.id);
    const groupId = (
      await prisma().userGroup.findFirstOrThrow({
        where: { realmId: org.realm.id, name: 'role:fullmembers' },
      })
    ).id;
    expect(published.map((entry) => entry.event)).toContainEqual({
      type: 'user_group',
      op: 'add_members',
      group_id: groupId,
      user_ids: [newcomer.id],
    });

    // A second run finds nothing new in this organization and announces nothing.
    const again = await captureEvents(org.realm.id, async () => {
      await promoteFullMembers();
    });
    expect(again.filter((entry) => entry.event.type === 'user_group')).toEqual([]);
  });
});
