"""Herald's notification center for apps on Linux, over `herald device run`'s agent socket
(docs/device-agent.md), with the shape of UserNotifications and asyncio.

    center = await UserNotificationCenter.connect("com.example.app", socket="phone/agent.sock", delegate=MyDelegate())
    if await center.request_authorization(["alert", "sound", "badge"]):
        token = await center.register_for_remote_notifications()

The messages' types (`messages`) are generated from docs/device-events.schema.json, the schema the
device's answers are checked against.
"""
from .center import (
    DEFAULT_ACTION_IDENTIFIER, DISMISS_ACTION_IDENTIFIER, AgentError, Closed, Delegate, NotificationResponse, PushRegistry, Refused,
    UserNotificationCenter, calendar, date, location, time_interval, wall_clock,
)
from . import messages

__all__ = [
    "DEFAULT_ACTION_IDENTIFIER", "DISMISS_ACTION_IDENTIFIER", "AgentError", "Closed", "Delegate", "NotificationResponse", "PushRegistry", "Refused",
    "UserNotificationCenter", "calendar", "date", "location", "messages", "time_interval", "wall_clock",
]
