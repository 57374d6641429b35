// Push-device registration (spec 4.14): POST and DELETE /users/me/apns_device_token and
// /users/me/android_gcm_reg_id; POST /mobile_push/test_notification. Bots are refused, as
// Zulip's human_users_only does.
import { Router } from 'express';
import { userEndpoint } from '@parley/auth';
import { runAction } from '@parley/db';
import { defineRoute, p } from '@parley/http';
import * as schema from '../presenters/schemas';
import {
  checkAppId,
  checkPushToken,
  doAddPushDevice,
  doRemovePushDevice,
  PushDeviceKind,
} from '../actions/push-devices';
import { sendTestPushNotification } from '../actions/push-notifications';

export const pushDeviceRoutes = Router();

defineRoute(pushDeviceRoutes, '/users/me/apns_device_token', {
  POST: userEndpoint(
    { humansOnly: true, params: { token: p.string(), appid: p.string() }, response: schema.empty },
    async ({ user, params }) => {
      checkAppId(params.appid);
      checkPushToken(params.token, PushDeviceKind.APNS);
      await runAction((ctx) =>
        doAddPushDevice(ctx, user, PushDeviceKind.APNS, params.token, params.appid),
      );
      return {};
    },
  ),
  DELETE: userEndpoint(
    { humansOnly: true, params: { token: p.string() }, response: schema.empty },
    async ({ user, params }) => {
      checkPushToken(params.token, PushDeviceKind.APNS);
      await runAction((ctx) => doRemovePushDevice(ctx, user, PushDeviceKind.APNS, params.token));
      return {};
    },
  ),
});

defineRoute(pushDeviceRoutes, '/users/me/android_gcm_reg_id', {
  POST: userEndpoint(
    { humansOnly: true, params: { token: p.string() }, response: schema.empty },
    async ({ user, params }) => {
      checkPushToken(params.token, PushDeviceKind.FCM);
      await runAction((ctx) => doAddPushDevice(ctx, user, PushDeviceKind.FCM, params.token, null));
      return {};
    },
  ),
  DELETE: userEndpoint(
    { humansOnly: true, params: { token: p.string() }, response: schema.empty },
    async ({ user, params }) => {
      checkPushToken(params.token, PushDeviceKind.FCM);
      await runAction((ctx) => doRemovePushDevice(ctx, user, PushDeviceKind.FCM, params.token));
      return {};
    },
  ),
});

defineRoute(pushDeviceRoutes, '/mobile_push/test_notification', {
  POST: userEndpoint(
    {
      humansOnly: true,
      params: { token: p.string({ maxLength: 4096 }).optional() },
      response: schema.empty,
    },
    async ({ user, realm, params }) => {
      await sendTestPushNotification(user, realm, params.token);
      return {};
    },
  ),
});
