// Logged-in client devices and end-to-end encrypted push (Zulip's feature levels 468-470):
// POST /register_client_device, POST /remove_client_device, POST /mobile_push/register and
// POST /mobile_push/e2ee/test_notification. Mobile apps make a device record once per login,
// then register it for encrypted notifications and rotate its key or token as they change.
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { runAction } from '@parley/db';
import { defineRoute, p, Param } from '@parley/http';
import * as schema from '../presenters/schemas';
import {
  doRegisterClientDevice,
  doRegisterPushDevice,
  doRemoveClientDevice,
  type PushKeyFields,
  type PushTokenFields,
} from '../actions/client-devices';
import { sendE2eeTestPushNotification } from '../actions/push-notifications';

export const clientDeviceRoutes = Router();

defineRoute(clientDeviceRoutes, '/register_client_device', {
  POST: userEndpoint({ response: z.object({ device_id: schema.id }) }, async ({ user }) => ({
    device_id: await runAction((ctx) => doRegisterClientDevice(ctx, user)),
  })),
});

defineRoute(clientDeviceRoutes, '/remove_client_device', {
  POST: userEndpoint(
    // Any id no device of the user has (negative ones too) is Zulip's "Invalid `device_id`".
    { params: { device_id: p.int() }, response: schema.empty },
    async ({ user, params }) => {
      await runAction((ctx) => doRemoveClientDevice(ctx, user, params.device_id));
      return {};
    },
  ),
});

/** Zulip's wording for a key id that is not an unsigned 32-bit integer. */
const pushKeyId = new Param(
  z
    .number()
    .int()
    .refine((value) => value >= 0 && value <= 0xffff_ffff, {
      message: 'Value error, Not a valid unsigned 32-bit integer',
    }),
  'int',
);

defineRoute(clientDeviceRoutes, '/mobile_push/register', {
  POST: userEndpoint(
    {
      humansOnly: true,
      params: {
        device_id: p.int(),
        token_kind: p.enum(['fcm', 'apns']).optional(),
        push_key: p.string({ maxLength: 256 }).optional(),
        push_key_id: pushKeyId.optional(),
        bouncer_public_key: p.string({ maxLength: 1024 }).optional(),
        // A sealed box of the token (up to 4,096 characters) and its details, in base64.
        encrypted_push_registration: p.string({ maxLength: 16_384 }).optional(),
        token_id: p.string({ maxLength: 64 }).optional(),
      },
      response: schema.empty,
    },
    async ({ user, params }) => {
      // A group of fields counts only when complete (Zulip's rule).
      const key: PushKeyFields | null =
        params.push_key !== undefined && params.push_key_id !== undefined
          ? { pushKey: params.push_key, pushKeyId: params.push_key_id }
          : null;
      const token: PushTokenFields | null =
        params.token_kind !== undefined &&
        params.token_id !== undefined &&
        params.bouncer_public_key !== undefined &&
        params.encrypted_push_registration !== undefined
          ? {
              tokenKind: params.token_kind,
              tokenId: params.token_id,
              bouncerPublicKey: params.bouncer_public_key,
              encryptedPushRegistration: params.encrypted_push_registration,
            }
          : null;
      await runAction((ctx) => doRegisterPushDevice(ctx, user, params.device_id, key, token));
      return {};
    },
  ),
});

defineRoute(clientDeviceRoutes, '/mobile_push/e2ee/test_notification', {
  POST: userEndpoint(
    {
      humansOnly: true,
      params: { device_id: p.int().optional() },
      response: schema.empty,
    },
    async ({ user, realm, params }) => {
      await sendE2eeTestPushNotification(user, realm, params.device_id);
      return {};
    },
  ),
});
