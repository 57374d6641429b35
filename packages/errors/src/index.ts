// Zulip's error model (zerver/lib/exceptions.py): one JsonableError base carrying the code,
// the HTTP status, extra JSON fields and headers; one small subclass per Zulip code. The HTTP
// layer serializes any of them as {result: 'error', msg, code, ...data}.

export type ErrorCode =
  | 'BAD_REQUEST'
  | 'REQUEST_VARIABLE_MISSING'
  | 'REQUEST_VARIABLE_INVALID'
  | 'REQUEST_CONFUSING_VAR'
  | 'INVALID_JSON'
  | 'BAD_NARROW'
  | 'BAD_EVENT_QUEUE_ID'
  | 'STREAM_DOES_NOT_EXIST'
  | 'UNAUTHORIZED_PRINCIPAL'
  | 'CANNOT_DEACTIVATE_LAST_USER'
  | 'INVITATION_FAILED'
  | 'INVALID_API_KEY'
  | 'UNAUTHORIZED'
  | 'AUTHENTICATION_FAILED'
  | 'USER_DEACTIVATED'
  | 'REALM_DEACTIVATED'
  | 'PASSWORD_AUTH_DISABLED'
  | 'NONEXISTENT_SUBDOMAIN'
  | 'RATE_LIMIT_HIT'
  | 'REACTION_ALREADY_EXISTS'
  | 'REACTION_DOES_NOT_EXIST'
  | 'MOVE_MESSAGES_TIME_LIMIT_EXCEEDED'
  | 'TOPIC_WILDCARD_MENTION_NOT_ALLOWED'
  | 'STREAM_WILDCARD_MENTION_NOT_ALLOWED'
  | 'SYSTEM_GROUP_REQUIRED'
  | 'CANNOT_DEACTIVATE_GROUP_IN_USE'
  | 'CANNOT_ADMINISTER_CHANNEL'
  | 'CHANNEL_ALREADY_EXISTS'
  | 'EXPECTATION_MISMATCH'
  | 'INVALID_PUSH_DEVICE_TOKEN'
  | 'INVALID_REMOTE_PUSH_DEVICE_TOKEN'
  | 'NO_ACTIVE_PUSH_DEVICE'
  | 'INTERNAL_SERVER_ERROR_ON_BOUNCER'
  | 'FAILED_TO_CONNECT_BOUNCER'
  | 'ADMIN_ACTION_REQUIRED'
  | 'REALM_UPLOAD_QUOTA'
  | 'INVALID_ZOOM_TOKEN'
  | 'UNKNOWN_ZOOM_USER'
  | 'SERVER_NOT_READY';

export type ErrorData = Record<string, unknown>;

export class JsonableError extends Error {
  readonly code: ErrorCode = 'BAD_REQUEST';
  readonly httpStatus: number = 400;
  readonly data: ErrorData = {};
  readonly headers: Record<string, string> = {};

  constructor(msg: string) {
    super(msg);
    this.name = new.target.name;
  }
}

/** Body of an error response, without the envelope's `result`. */
export function errorBody(error: JsonableError): { msg: string; code: ErrorCode } & ErrorData {
  // msg and code come last so no data field can replace them.
  return { ...error.data, msg: error.message, code: error.code };
}

// ---- Request parsing ------------------------------------------------------------------------

export class RequestVariableMissingError extends JsonableError {
  override readonly code = 'REQUEST_VARIABLE_MISSING';
  override readonly data: ErrorData;
  constructor(varName: string) {
    super(`Missing '${varName}' argument`);
    this.data = { var_name: varName };
  }
}

export class RequestVariableConversionError extends JsonableError {
  override readonly code = 'REQUEST_VARIABLE_INVALID';
  override readonly data: ErrorData;
  constructor(varName: string, badValue: unknown) {
    super(`Bad value for '${varName}': ${String(badValue)}`);
    this.data = { var_name: varName, bad_value: badValue };
  }
}

export class RequestConfusingParamsError extends JsonableError {
  override readonly code = 'REQUEST_CONFUSING_VAR';
  override readonly data: ErrorData;
  constructor(varName1: string, varName2: string) {
    super(`Can't decide between '${varName1}' and '${varName2}' arguments`);
    this.data = { var_name1: varName1, var_name2: varName2 };
  }
}

export class InvalidJSONError extends JsonableError {
  override readonly code = 'INVALID_JSON';
  constructor(msg = 'Malformed JSON') {
    super(msg);
  }
}

export class IncompatibleParametersError extends JsonableError {
  override readonly data: ErrorData;
  constructor(parameters: string[]) {
    super(`Unsupported parameter combination: ${parameters.join(', ')}`);
    this.data = { parameters: parameters.join(', ') };
  }
}

/** Validation failures of typed parameters (Zulip's ApiParamValidationError): BAD_REQUEST. */
export class ApiParamValidationError extends JsonableError {}

// ---- Authentication and authorization -------------------------------------------------------

export class UnauthorizedError extends JsonableError {
  override readonly code = 'UNAUTHORIZED';
  override readonly httpStatus = 401;
  override readonly headers = { 'WWW-Authenticate': 'Basic realm="zulip"' };
  constructor(msg = 'Not logged in: API authentication or user session required') {
    super(msg);
  }
}

export class InvalidAPIKeyError extends JsonableError {
  override readonly code = 'INVALID_API_KEY';
  override readonly httpStatus = 401;
  constructor(msg = 'Invalid API key') {
    super(msg);
  }
}

export class AuthenticationFailedError extends JsonableError {
  override readonly code = 'AUTHENTICATION_FAILED';
  override readonly httpStatus = 401;
  constructor(msg = 'Your username or password is incorrect') {
    super(msg);
  }
}

export class UserDeactivatedError extends JsonableError {
  override readonly code = 'USER_DEACTIVATED';
  override readonly httpStatus = 401;
  constructor() {
    super('Account is deactivated');
  }
}

export class RealmDeactivatedError extends JsonableError {
  override readonly code = 'REALM_DEACTIVATED';
  override readonly httpStatus = 401;
  constructor() {
    super('This organization has been deactivated');
  }
}

export class PasswordAuthDisabledError extends JsonableError {
  override readonly code = 'PASSWORD_AUTH_DISABLED';
  override readonly httpStatus = 401;
  constructor() {
    super('Password authentication is disabled in this organization');
  }
}

export class InvalidSubdomainError extends JsonableError {
  override readonly code = 'NONEXISTENT_SUBDOMAIN';
  override readonly httpStatus = 404;
  constructor() {
    super('Invalid subdomain');
  }
}

export class RateLimitedError extends JsonableError {
  override readonly code = 'RATE_LIMIT_HIT';
  override readonly httpStatus = 429;
  override readonly data: ErrorData;
  override readonly headers: Record<string, string>;
  constructor(retryAfterSeconds: number) {
    super('API usage exceeded rate limit');
    this.data = { 'retry-after': retryAfterSeconds };
    this.headers = { 'Retry-After': String(Math.ceil(retryAfterSeconds)) };
  }
}

export class OrganizationMemberRequiredError extends JsonableError {
  override readonly code = 'UNAUTHORIZED_PRINCIPAL';
  constructor() {
    super('Must be an organization member');
  }
}

export class OrganizationAdministratorRequiredError extends JsonableError {
  override readonly code = 'UNAUTHORIZED_PRINCIPAL';
  constructor() {
    super('Must be an organization administrator');
  }
}

export class OrganizationOwnerRequiredError extends JsonableError {
  override readonly code = 'UNAUTHORIZED_PRINCIPAL';
  constructor() {
    super('Must be an organization owner');
  }
}

export class AccessDeniedError extends JsonableError {
  override readonly httpStatus = 403;
  constructor() {
    super('Access denied');
  }
}

/** Missing drafts, scheduled messages and saved snippets: BAD_REQUEST with HTTP 404. */
export class ResourceNotFoundError extends JsonableError {
  override readonly httpStatus = 404;
}

/** An upload the user may not open (Zulip answers 403 for these). */
export class FileAccessDeniedError extends JsonableError {
  override readonly httpStatus = 403;
  constructor() {
    super('You are not authorized to view this file.');
  }
}

// ---- Domain errors --------------------------------------------------------------------------

export class CannotDeactivateLastUserError extends JsonableError {
  override readonly code = 'CANNOT_DEACTIVATE_LAST_USER';
  override readonly data: ErrorData;
  constructor(isLastOwner: boolean) {
    const entity = isLastOwner ? 'organization owner' : 'user';
    super(`Cannot deactivate the only ${entity}.`);
    this.data = { is_last_owner: isLastOwner, entity };
  }
}

/** A user group that a setting or an active supergroup still names (`objections` says which). */
export class CannotDeactivateGroupInUseError extends JsonableError {
  override readonly code = 'CANNOT_DEACTIVATE_GROUP_IN_USE';
  override readonly data: ErrorData;
  constructor(objections: Record<string, unknown>[]) {
    super('Cannot deactivate user group in use.');
    this.data = { objections };
  }
}

export class StreamDoesNotExistError extends JsonableError {
  override readonly code = 'STREAM_DOES_NOT_EXIST';
  override readonly data: ErrorData;
  constructor(stream: string) {
    super(`Channel '${stream}' does not exist`);
    this.data = { stream };
  }
}

export class StreamWithIDDoesNotExistError extends JsonableError {
  override readonly code = 'STREAM_DOES_NOT_EXIST';
  override readonly data: ErrorData;
  constructor(streamId: number) {
    super(`Channel with ID '${streamId}' does not exist`);
    this.data = { stream_id: streamId };
  }
}

/** @**all** and friends in a large channel, by someone not allowed to notify that many. */
export class StreamWildcardMentionNotAllowedError extends JsonableError {
  override readonly code = 'STREAM_WILDCARD_MENTION_NOT_ALLOWED';
  constructor() {
    super('You do not have permission to use channel wildcard mentions in this channel.');
  }
}

/** @**topic** in a topic with many participants, likewise. */
export class TopicWildcardMentionNotAllowedError extends JsonableError {
  override readonly code = 'TOPIC_WILDCARD_MENTION_NOT_ALLOWED';
  constructor() {
    super('You do not have permission to use topic wildcard mentions in this topic.');
  }
}

/** Zulip's MessageMoveError: a whole-topic move reaching messages older than the user may
 * move; says which of the topic's most recent messages they may move. */
export class MessageMoveError extends JsonableError {
  override readonly code = 'MOVE_MESSAGES_TIME_LIMIT_EXCEEDED';
  override readonly data: ErrorData;
  constructor(firstAllowed: number | null, total: number, allowed: number) {
    super(
      `You only have permission to move the ${allowed}/${total} most recent messages in this topic.`,
    );
    this.data = {
      first_message_id_allowed_to_move: firstAllowed,
      total_messages_in_topic: total,
      total_messages_allowed_to_move: allowed,
    };
  }
}

/** A channel the user can read but not administer (rename, archive, settings). */
export class CannotAdministerChannelError extends JsonableError {
  override readonly code = 'CANNOT_ADMINISTER_CHANNEL';
  constructor() {
    super('You do not have permission to administer this channel.');
  }
}

/** Creating or renaming to a name another channel has, archived ones included: HTTP 409. */
export class ChannelExistsError extends JsonableError {
  override readonly code = 'CHANNEL_ALREADY_EXISTS';
  override readonly httpStatus = 409;
  constructor(name: string) {
    super(`Channel '${name}' already exists`);
  }
}

export class BadEventQueueIdError extends JsonableError {
  override readonly code = 'BAD_EVENT_QUEUE_ID';
  override readonly data: ErrorData;
  constructor(queueId: string) {
    super(`Bad event queue ID: ${queueId}`);
    this.data = { queue_id: queueId };
  }
}

/** An invalid narrow; `desc` says what (Zulip's BadNarrowOperatorError). */
export class BadNarrowError extends JsonableError {
  override readonly code = 'BAD_NARROW';
  override readonly data: ErrorData;
  constructor(msg: string, desc: string) {
    super(msg);
    this.data = { desc };
  }
}

/** A change made against a value that has changed since (Zulip's ExpectationMismatchError):
 * `field_name` says which expectation failed. */
export class ExpectationMismatchError extends JsonableError {
  override readonly code = 'EXPECTATION_MISMATCH';
  override readonly data: ErrorData;
  constructor(fieldName: string) {
    super(`'${fieldName}' value does not match the expected value.`);
    this.data = { field_name: fieldName };
  }
}

/** A setting change whose `old` value is not the current one (Zulip's
 * PreviousSettingValueMismatchedError). */
export class PreviousSettingValueMismatchedError extends ExpectationMismatchError {
  constructor() {
    super('old');
  }
}

/** A message edit made against content that has changed since. */
export class PreviousMessageContentMismatchedError extends ExpectationMismatchError {
  constructor() {
    super('prev_content_sha256');
  }
}

/** A setting only a system group may hold, given another group (Zulip's
 * SystemGroupRequiredError). */
export class SystemGroupRequiredError extends JsonableError {
  override readonly code = 'SYSTEM_GROUP_REQUIRED';
  override readonly data: ErrorData;
  constructor(settingName: string) {
    super(`'${settingName}' must be a system user group.`);
    this.data = { setting_name: settingName };
  }
}

export class ReactionExistsError extends JsonableError {
  override readonly code = 'REACTION_ALREADY_EXISTS';
  constructor() {
    super('Reaction already exists.');
  }
}

export class ReactionDoesNotExistError extends JsonableError {
  override readonly code = 'REACTION_DOES_NOT_EXIST';
  constructor() {
    super("Reaction doesn't exist.");
  }
}

/** Zulip's ValidationFailureError: a Django model's validation failed. The message is the
 * first of them; `errors` holds them all by field (`__all__` for the model's own checks). */
export class ValidationFailureError extends JsonableError {
  override readonly data: ErrorData;
  constructor(errors: Record<string, string[]>) {
    super(Object.values(errors).flat()[0] ?? 'Invalid input');
    this.data = { errors };
  }
}

export class InvitationError extends JsonableError {
  override readonly code = 'INVITATION_FAILED';
  override readonly data: ErrorData;
  constructor(
    msg: string,
    fields: {
      errors: [string, string, boolean][];
      sentInvitations: boolean;
      licenseLimitReached?: boolean;
      dailyLimitReached?: boolean;
    },
  ) {
    super(msg);
    this.data = {
      errors: fields.errors,
      sent_invitations: fields.sentInvitations,
      license_limit_reached: fields.licenseLimitReached ?? false,
      daily_limit_reached: fields.dailyLimitReached ?? false,
    };
  }
}

/** Zulip's InvalidPushDeviceTokenError: the token is not one of the user's devices. */
export class InvalidPushDeviceTokenError extends JsonableError {
  override readonly code = 'INVALID_PUSH_DEVICE_TOKEN';
  constructor() {
    super('Device not recognized');
  }
}

/** Zulip's InvalidRemotePushDeviceTokenError: the push bouncer does not know the device. */
export class InvalidRemotePushDeviceTokenError extends JsonableError {
  override readonly code = 'INVALID_REMOTE_PUSH_DEVICE_TOKEN';
  constructor() {
    super('Device not recognized by the push bouncer');
  }
}

/** Zulip's NoActivePushDeviceError: an E2EE test notification found none of the user's
 * devices registered (or the push service said every one of them is gone). */
export class NoActivePushDeviceError extends JsonableError {
  override readonly code = 'NO_ACTIVE_PUSH_DEVICE';
  constructor() {
    super('No active registered push device');
  }
}

/** Zulip's InternalBouncerServerError (E2EE test notifications): the push service failed. */
export class InternalBouncerServerError extends JsonableError {
  override readonly code = 'INTERNAL_SERVER_ERROR_ON_BOUNCER';
  override readonly httpStatus = 502;
  constructor() {
    super('Internal server error on Zulip push notification service, retry later.');
  }
}

/** Zulip's FailedToConnectBouncerError (E2EE test notifications): no answer at all. */
export class FailedToConnectBouncerError extends JsonableError {
  override readonly code = 'FAILED_TO_CONNECT_BOUNCER';
  override readonly httpStatus = 502;
  constructor() {
    super('Network error while connecting to Zulip push notification service.');
  }
}

/** Zulip's PushNotificationAdminActionRequiredError: the push service refused this server
 * (its registration or credentials), which only the administrator can mend. */
export class PushAdminActionRequiredError extends JsonableError {
  override readonly code = 'ADMIN_ACTION_REQUIRED';
  override readonly httpStatus = 403;
  constructor() {
    super(
      'Push notification configuration issue on server, contact the server administrator or retry later.',
    );
  }
}

/** Zulip's PushNotificationBouncerRetryLaterError, for a request waiting on the bouncer: it
 * could not be reached or failed (502, worth trying again later). */
export class PushBouncerUnavailableError extends JsonableError {
  override readonly httpStatus = 502;
  constructor(detail: string) {
    super(detail);
  }
}

/** A dependency (PostgreSQL, Redis) cannot be reached: a quick 503 the client may retry,
 * instead of a 500 or a hang. */
export class ServiceUnavailableError extends JsonableError {
  override readonly code = 'SERVER_NOT_READY';
  override readonly httpStatus = 503;
  override readonly headers: Record<string, string>;
  constructor(retryAfterSeconds = 2) {
    super('The server is temporarily unavailable; try again in a moment.');
    this.headers = { 'Retry-After': String(retryAfterSeconds) };
  }
}

/** Zulip's RealmUploadQuotaError (check_upload_within_quota): the organization's uploads would
 * exceed its upload quota. */
export class RealmUploadQuotaError extends JsonableError {
  override readonly code = 'REALM_UPLOAD_QUOTA';
  override readonly httpStatus: number;
  constructor(httpStatus = 400) {
    super("Upload would exceed your organization's upload quota.");
    this.httpStatus = httpStatus;
  }
}

// ---- Transport-level errors (no Zulip class of their own; Zulip's nginx/Django answer these) --

export class PayloadTooLargeError extends JsonableError {
  override readonly httpStatus = 413;
  constructor(limitBytes?: number) {
    super(
      limitBytes ? `Request body too large (limit: ${limitBytes} bytes)` : 'Request body too large',
    );
  }
}

export class NotFoundError extends JsonableError {
  override readonly httpStatus = 404;
  constructor() {
    super('Endpoint does not exist');
  }
}

/** Zulip answers 405 with `allowed_methods`; Parley adds `code` as spec 7 requires. */
export class MethodNotAllowedError extends JsonableError {
  override readonly httpStatus = 405;
  override readonly data: ErrorData;
  override readonly headers: Record<string, string>;
  constructor(allowedMethods: string[]) {
    super('Method Not Allowed');
    this.data = { allowed_methods: allowedMethods };
    this.headers = { Allow: allowedMethods.join(', ') };
  }
}

/** Spec 7: insufficient permission is BAD_REQUEST (HTTP 400). */
export class InsufficientPermissionError extends JsonableError {
  constructor() {
    super('Insufficient permission');
  }
}

/** Zulip's human_users_only decorator. */
export class HumanUsersOnlyError extends JsonableError {
  constructor() {
    super('This endpoint does not accept bot requests.');
  }
}
