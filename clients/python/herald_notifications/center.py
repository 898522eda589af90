"""An app's notification center on a device run by `herald device run`, over its agent socket
(docs/device-agent.md), with asyncio: UserNotifications' UNUserNotificationCenter in Python."""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, cast

from .messages import (
    AnyCallback, AppState, AuthorizationOption, CallActionType, CommunicationContext, DeliveredNotification, FetchResult,
    LiveActivity, NotificationCategory, NotificationContent, NotificationRequest, NotificationSettings,
    NotificationTrigger, NotificationTriggerCalendarComponents, PendingNotificationRequest, PresentationOption,
    PushKitKind, PushKitPush, RegistryPushType, RepeatUnit, WebPushSubscription,
)

# The agent's bound on one line, in both directions.
MAXIMUM_LINE_LENGTH = 1 << 20
DEFAULT_ACTION_IDENTIFIER = "com.apple.UNNotificationDefaultActionIdentifier"
DISMISS_ACTION_IDENTIFIER = "com.apple.UNNotificationDismissActionIdentifier"


class AgentError(Exception):
    """Talking to the device agent went wrong."""


class Refused(AgentError):
    """The agent refused a request; `reason` is what it said is wrong."""

    def __init__(self, op: str, reason: str) -> None:
        super().__init__(f"the device agent refused {op}: {reason}")
        self.op, self.reason = op, reason


class Closed(AgentError):
    """The connection to the agent is closed."""


@dataclass(frozen=True)
class NotificationResponse:
    """The user's response to a notification (UNNotificationResponse)."""
    notification: DeliveredNotification
    action_identifier: str
    user_text: str | None = None
    required_unlock: bool = False


class Delegate:
    """What the app answers when the device asks (UNUserNotificationCenterDelegate, a silent push's
    fetch handler, a service extension); the answer is the return value. Override what you handle:
    the defaults are iOS's when a delegate does not implement a method. A method that has not
    returned after the center's `answer_deadline` (25 s; the device waits 30) is answered with its
    default by the library and counted in `missed_deadlines`."""

    async def will_present(self, notification: DeliveredNotification) -> list[PresentationOption]:
        return []

    async def did_receive(self, response: NotificationResponse) -> None:
        return None

    async def did_receive_remote_notification(self, payload: dict[str, Any]) -> FetchResult:
        return "noData"

    async def service_extension(self, payload: dict[str, Any]) -> tuple[dict[str, Any], CommunicationContext | None]:
        return payload, None

    async def replacement_for_mutable_web_push(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """A mutable Declarative Web Push message (`message["proposed"]` is the notification the
        device would show): a notification to show instead, or None (the default) to show it."""
        return None

    async def did_receive_incoming_push(self, push: PushKitPush) -> dict[str, Any]:
        """A PushKit push (docs/push-types/): complete it by returning `{}`; a Push to Talk push
        with `{"activeRemoteParticipant": name}` or `{"leaveChannel": True}`. A VoIP push whose
        `mustReport` is true is reported (`PushRegistry.report_incoming_call`) before returning,
        or the device terminates the app."""
        return {}

    async def perform_call_action(self, action: CallActionType, call: str) -> None:
        """The user answered (`answer`) or declined (`end`) a reported call."""
        return None


# Triggers, as docs/device-plan.md reads them.

def time_interval(seconds: float, repeats: bool = False) -> NotificationTrigger:
    return {"type": "interval", "seconds": seconds, "repeats": repeats}


def calendar(components: NotificationTriggerCalendarComponents, repeats: bool = False) -> NotificationTrigger:
    """Fires when the components match in the device's current zone (weekday 1 is Sunday)."""
    return {"type": "calendar", "components": components, "repeats": repeats}


def date(instant: datetime, repeat: RepeatUnit | None = None) -> NotificationTrigger:
    """An absolute instant (an aware datetime): a countdown, unmoved by zone changes."""
    if instant.tzinfo is None:
        raise ValueError("an absolute instant needs a time zone: use wall_clock for a time that follows the device")
    trigger: NotificationTrigger = {"type": "date", "date": instant.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    if repeat:
        trigger["repeat"] = repeat
    return trigger


def wall_clock(local: datetime, time_zone: str, repeat: RepeatUnit | None = None) -> NotificationTrigger:
    """UILocalNotification's fireDate, timeZone and repeatInterval: a wall-clock time written in
    `time_zone` (an IANA name) that follows the device's zone."""
    trigger: NotificationTrigger = {"type": "date", "date": local.replace(tzinfo=None).strftime("%Y-%m-%dT%H:%M:%S"), "timeZone": time_zone}
    if repeat:
        trigger["repeat"] = repeat
    return trigger


def location(latitude: float, longitude: float, radius: float, on_entry: bool = True, on_exit: bool = True, repeats: bool = False) -> NotificationTrigger:
    return {"type": "location", "latitude": latitude, "longitude": longitude, "radius": radius,
            "onEntry": on_entry, "onExit": on_exit, "repeats": repeats}


class UserNotificationCenter:
    """One app process on the device: `await UserNotificationCenter.connect(app, socket)`, then the
    UserNotifications calls as coroutines. `events` gets every callback the device writes (the
    newest 256 kept); `send` sends any agent request (the `user` and `device` ops too)."""

    def __init__(self, app: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 delegate: Delegate | None, answer_deadline: float) -> None:
        self.app = app
        self.delegate = delegate or Delegate()
        self.answer_deadline = answer_deadline
        self.missed_deadlines = 0
        self.settings_at_launch: NotificationSettings | None = None
        self.events: asyncio.Queue[AnyCallback] = asyncio.Queue(maxsize=256)
        self._reader, self._writer = reader, writer
        self._next_id = 1
        self._answers: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._waiters: list[tuple[Any, asyncio.Future[AnyCallback]]] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False
        self._reading = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def connect(cls, app: str, socket: str | None = None, state: AppState = "foreground", service_extension: bool = False,
                      delegate: Delegate | None = None, answer_deadline: float = 25.0) -> UserNotificationCenter:
        """Connects to the device at `socket` (default: $HERALD_AGENT_SOCKET) as `app`; the delegate
        is in place before `hello`, so nothing that comes at once is missed."""
        path = socket or os.environ.get("HERALD_AGENT_SOCKET")
        if not path:
            raise AgentError("no socket path: pass socket= or set HERALD_AGENT_SOCKET")
        try:
            reader, writer = await asyncio.open_unix_connection(path, limit=MAXIMUM_LINE_LENGTH + 1)
        except OSError as error:
            raise AgentError(f"cannot reach the device agent at {path}: {error} (is `herald device run` running with this --agent-socket?)") from error
        center = cls(app, reader, writer, delegate, answer_deadline)
        hello: dict[str, Any] = {"op": "hello", "app": app, "state": state}
        if service_extension:
            hello["serviceExtension"] = True
        try:
            answer = await center.send(hello)
        except BaseException:
            await center.close()
            raise
        center.settings_at_launch = answer["settings"]
        return center

    async def __aenter__(self) -> UserNotificationCenter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Closes the connection: the device treats the app as terminated."""
        if not self._closed:
            self._closed = True
            self._writer.close()
            with contextlib.suppress(Exception):
                await self._writer.wait_closed()
        self._reading.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reading

    async def send(self, request: Any) -> dict[str, Any]:
        """Sends one request (an `…Request` TypedDict without its id) and returns its answer;
        a refusal raises `Refused` with the agent's reason."""
        if self._closed:
            raise Closed("the connection to the device agent is closed")
        number = self._next_id
        self._next_id += 1
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._answers[number] = answer
        line = json.dumps({**request, "id": number}, separators=(",", ":")).encode() + b"\n"
        if len(line) > MAXIMUM_LINE_LENGTH:
            del self._answers[number]
            raise AgentError(f"a request of {len(line)} bytes is past the agent's 1 MiB line")
        self._writer.write(line)
        await self._writer.drain()
        result = await answer
        if not result.get("ok"):
            raise Refused(str(request.get("op")), str(result.get("error")))
        return result

    async def _read(self) -> None:
        try:
            while True:
                try:
                    line = await self._reader.readline()
                except (ValueError, asyncio.LimitOverrunError):
                    break  # a line past 1 MiB: not the agent's
                if not line:
                    break
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(message, dict):
                    continue
                if "event" in message:
                    self._received(cast(AnyCallback, message))
                elif (answer := self._answers.pop(message.get("id"), None)) is not None and not answer.done():  # type: ignore[arg-type]
                    answer.set_result(message)
        finally:
            self._closed = True
            futures: list[asyncio.Future[Any]] = [*self._answers.values(), *(f for _, f in self._waiters)]
            for future in futures:
                if not future.done():
                    future.set_exception(Closed("the connection to the device agent is closed"))
            self._answers.clear()
            self._waiters.clear()

    def _received(self, event: AnyCallback) -> None:
        for accepts, future in list(self._waiters):
            if not future.done() and accepts(event):
                future.set_result(event)
                self._waiters.remove((accepts, future))
        if self.events.full():
            self.events.get_nowait()
        self.events.put_nowait(event)
        kind, number = event["event"], event.get("callback")
        if kind == "callAction":
            self._call_action(event)
        if not isinstance(number, int):
            return
        d = self.delegate
        if kind == "willPresent":
            notification = cast(DeliveredNotification, event["notification"])  # type: ignore[typeddict-item]
            self._answer(number, {"options": []}, lambda: d.will_present(notification), lambda options: {"options": options})
        elif kind == "didReceive":
            e: Any = event
            response = NotificationResponse(e["notification"], e["actionId"], e.get("text"), bool(e.get("requiredUnlock")))
            self._answer(number, {}, lambda: d.did_receive(response), lambda _: {})
        elif kind == "silentPush":
            payload = cast(dict[str, Any], event["payload"])  # type: ignore[typeddict-item]
            self._answer(number, {"result": "noData"}, lambda: d.did_receive_remote_notification(payload), lambda result: {"result": result})
        elif kind == "serviceExtension":
            pushed = cast(dict[str, Any], event["payload"])  # type: ignore[typeddict-item]

            def content(answer: tuple[dict[str, Any], CommunicationContext | None]) -> dict[str, Any]:
                fields: dict[str, Any] = {"content": answer[0]}
                if answer[1] is not None:
                    fields["communication"] = answer[1]
                return fields
            self._answer(number, {"content": pushed}, lambda: d.service_extension(pushed), content)
        elif kind == "webPush":
            message = cast(dict[str, Any], event)
            self._answer(number, {}, lambda: d.replacement_for_mutable_web_push(message),
                         lambda replacement: {} if replacement is None else {"notification": replacement})
        elif kind == "pushKit":
            push = cast(PushKitPush, event["push"])  # type: ignore[typeddict-item]
            # Push to Talk's device waits 5 s, not 30: the library answers for the app before.
            deadline = min(self.answer_deadline, 4.0) if push["kind"] == "pushtotalk" else None
            self._answer(number, {}, lambda: d.did_receive_incoming_push(push), lambda answer: answer, deadline)

    def _call_action(self, event: Any) -> None:
        task = asyncio.get_running_loop().create_task(self.delegate.perform_call_action(event["action"], event["call"]))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _answer(self, number: int, fallback: dict[str, Any], work: Any, fields: Any, deadline: float | None = None) -> None:
        """Answers callback `number` with the delegate's return value, or with `fallback` once the
        deadline passes first (counted)."""
        async def run() -> None:
            try:
                answer = fields(await asyncio.wait_for(work(), deadline or self.answer_deadline))
            except asyncio.TimeoutError:
                self.missed_deadlines += 1
                answer = fallback
            with contextlib.suppress(AgentError, OSError):
                await self.send({"op": "complete", "callback": number, **answer})
        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _wait_for(self, accepts: Any, timeout: float, what: str, trigger: Any) -> AnyCallback:
        future: asyncio.Future[AnyCallback] = asyncio.get_running_loop().create_future()
        self._waiters.append((accepts, future))
        try:
            done = await trigger()
            if done is not None:
                return cast(AnyCallback, done)
            return await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            raise AgentError(f"timed out waiting for {what}") from None
        finally:
            if (accepts, future) in self._waiters:
                self._waiters.remove((accepts, future))

    # Authorization and settings.

    async def request_authorization(self, options: list[AuthorizationOption]) -> bool:
        return bool((await self.send({"op": "requestAuthorization", "options": options}))["granted"])

    async def notification_settings(self) -> NotificationSettings:
        return cast(NotificationSettings, (await self.send({"op": "settings"}))["settings"])

    async def set_application_state(self, state: AppState) -> None:
        await self.send({"op": "state", "state": state})

    # Categories.

    async def set_notification_categories(self, categories: list[NotificationCategory]) -> list[str]:
        return cast(list[str], (await self.send({"op": "setCategories", "categories": categories}))["ignored"])

    async def notification_categories(self) -> list[NotificationCategory]:
        return cast(list[NotificationCategory], (await self.send({"op": "categories"}))["categories"])

    # Local requests.

    async def add(self, identifier: str, content: NotificationContent, trigger: NotificationTrigger | None = None) -> list[str]:
        """Schedules a request (the same id is replaced); returns ids dropped by the 64 limit."""
        request: NotificationRequest = {"id": identifier, "content": content}
        if trigger is not None:
            request["trigger"] = trigger
        return cast(list[str], (await self.send({"op": "add", "request": request}))["dropped"])

    async def present(self, identifier: str, content: NotificationContent) -> None:
        await self.send({"op": "presentNow", "request": {"id": identifier, "content": content}})

    async def pending_notification_requests(self) -> list[PendingNotificationRequest]:
        return cast(list[PendingNotificationRequest], (await self.send({"op": "pending"}))["requests"])

    async def remove_pending_notification_requests(self, identifiers: list[str]) -> None:
        await self.send({"op": "removePending", "ids": identifiers})

    async def remove_all_pending_notification_requests(self) -> None:
        await self.send({"op": "removeAllPending"})

    async def cancel_local_notifications(self, identifiers: list[str]) -> None:
        await self.send({"op": "cancel", "ids": identifiers})

    async def cancel_all_local_notifications(self) -> None:
        await self.send({"op": "cancelAll"})

    # Notification Center and the badge.

    async def delivered_notifications(self) -> list[DeliveredNotification]:
        return cast(list[DeliveredNotification], (await self.send({"op": "delivered"}))["notifications"])

    async def remove_delivered_notifications(self, identifiers: list[str]) -> None:
        await self.send({"op": "removeDelivered", "ids": identifiers})

    async def remove_all_delivered_notifications(self) -> None:
        await self.send({"op": "removeAllDelivered"})

    async def set_badge_count(self, count: int) -> None:
        await self.send({"op": "setBadge", "badge": count})

    async def badge_count(self) -> int:
        return int((await self.send({"op": "badge"}))["badge"])

    # Remote notifications, Live Activity and widget tokens.

    async def register_for_remote_notifications(self, timeout: float = 30.0) -> str:
        """The device token (hex) the `registered` callback brings: send it, with the user's
        language, to your provider."""
        async def trigger() -> None:
            await self.send({"op": "registerForRemote"})
        event: Any = await self._wait_for(lambda e: e["event"] == "registered", timeout, "the device token (is the device connected to its gateway?)", trigger)
        return str(event["token"])

    async def request_push_to_start_token(self) -> None:
        await self.send({"op": "pushToStartToken"})

    async def configure_widget_pushes(self, enabled: bool = True) -> None:
        await self.send({"op": "configureWidgetPushes", "enabled": enabled})

    # Web Push.

    async def subscribe_to_web_push(self, application_server_key: str | None, scope: str = "default", timeout: float = 30.0) -> WebPushSubscription:
        """A Web Push subscription, returned once the gateway gave it an endpoint."""
        request = {"op": "webPushSubscribe", "applicationServerKey": application_server_key, "scope": scope}
        first = cast(WebPushSubscription, (await self.send(request))["subscription"])
        if first["endpoint"] is not None:
            return first

        async def trigger() -> Any:
            again = (await self.send(request))["subscription"]
            return {"event": "webPushSubscription", "subscription": again} if again["endpoint"] is not None else None
        event: Any = await self._wait_for(
            lambda e: e["event"] == "webPushSubscription" and e["subscription"]["scope"] == scope and e["subscription"]["endpoint"] is not None,
            timeout, f"the Web Push endpoint of {scope}", trigger)
        return cast(WebPushSubscription, event["subscription"])

    async def web_push_subscriptions(self) -> list[WebPushSubscription]:
        return cast(list[WebPushSubscription], (await self.send({"op": "webPushSubscriptions"}))["subscriptions"])

    async def unsubscribe_from_web_push(self, scope: str = "default") -> bool:
        return bool((await self.send({"op": "webPushUnsubscribe", "scope": scope}))["unsubscribed"])

    # Live Activities.

    async def activities(self) -> list[LiveActivity]:
        return cast(list[LiveActivity], (await self.send({"op": "activities"}))["activities"])

    async def start_activity(self, attributes_type: str, attributes: dict[str, Any], content_state: dict[str, Any],
                             stale_date: int | None = None, push_type: str | dict[str, str] | None = None) -> LiveActivity:
        """`push_type`: None (only the app updates it), "token", or {"channel": ID}."""
        request: dict[str, Any] = {"op": "startActivity", "attributesType": attributes_type, "attributes": attributes,
                                   "contentState": content_state, "pushType": push_type}
        if stale_date is not None:
            request["staleDate"] = stale_date
        return cast(LiveActivity, (await self.send(request))["activity"])

    async def end_activity(self, activity: str, content_state: dict[str, Any] | None = None, dismissal_date: int | None = None) -> None:
        request: dict[str, Any] = {"op": "endActivity", "activity": activity}
        if content_state is not None:
            request["contentState"] = content_state
        if dismissal_date is not None:
            request["dismissalDate"] = dismissal_date
        await self.send(request)


class PushRegistry:
    """PushKit's side of the device for an app (docs/push-types/): the registry's tokens (VoIP,
    complication, File Provider), location push monitoring, the Push to Talk channel and CallKit's
    call reports, over the app's center. Each kind has its own token, for the provider; pushes
    reach the center's delegate (`Delegate.did_receive_incoming_push`)."""

    def __init__(self, center: UserNotificationCenter) -> None:
        self.center = center

    async def set_desired_push_types(self, types: list[RegistryPushType]) -> dict[str, str]:
        """The registry's kinds to hold tokens for; kinds left out give theirs up. The tokens known now."""
        return dict((await self.center.send({"op": "pushRegistry", "types": types}))["tokens"])

    async def token(self, kind: PushKitKind, ask: Any, timeout: float = 30.0) -> str:
        """The token of `kind`, waiting for the device to be issued it after `ask()` (one of the
        coroutines below) asked for it."""
        async def trigger() -> Any:
            known: dict[str, str] = await ask()
            return {"event": "pushToken", "kind": kind, "token": known[kind]} if kind in known else None
        event: Any = await self.center._wait_for(lambda e: e["event"] == "pushToken" and e["kind"] == kind, timeout,
                                                 f"the {kind} token (is the device connected to its gateway?)", trigger)
        return str(event["token"])

    async def start_monitoring_location_pushes(self) -> dict[str, str]:
        return dict((await self.center.send({"op": "startMonitoringLocationPushes"}))["tokens"])

    async def stop_monitoring_location_pushes(self) -> None:
        await self.center.send({"op": "stopMonitoringLocationPushes"})

    async def join_channel(self, channel: str) -> dict[str, str]:
        """Joins a Push to Talk channel (its UUID): its token exists while it is joined."""
        return dict((await self.center.send({"op": "joinChannel", "channel": channel}))["tokens"])

    async def leave_channel(self) -> None:
        await self.center.send({"op": "leaveChannel"})

    async def report_incoming_call(self, call: str, handle: str, caller: str | None = None, video: bool = False) -> None:
        """CXProvider.reportNewIncomingCall: the device shows the call with Answer and Decline."""
        await self.center.send({"op": "reportIncomingCall", "call": call, "handle": handle, "caller": caller, "video": video})

    async def end_call(self, call: str) -> None:
        await self.center.send({"op": "endCall", "call": call})
