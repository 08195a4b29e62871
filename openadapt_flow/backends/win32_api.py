"""The user32/shcore calls of backends/win32_input.py, bound with ctypes (Windows only; nothing here runs elsewhere,
so nothing here decides: the decisions are win32_input's, tested with a fake of this class)."""

from __future__ import annotations

import ctypes
from typing import Any

from openadapt_flow.backends.win32_input import Monitor

_MONITORINFOF_PRIMARY = 1
_MDT_EFFECTIVE_DPI = 0
_MAPVK_VK_TO_VSC = 0


class _Rect(ctypes.Structure):
    _fields_ = [
        ("left", ctypes.c_int32),
        ("top", ctypes.c_int32),
        ("right", ctypes.c_int32),
        ("bottom", ctypes.c_int32),
    ]


class _MonitorInfo(ctypes.Structure):
    _fields_ = [("cbSize", ctypes.c_uint32), ("rcMonitor", _Rect), ("rcWork", _Rect), ("dwFlags", ctypes.c_uint32)]


class WindllApi:  # pragma: no cover - Windows only
    """win32_input.Win32Api over ctypes.windll."""

    def __init__(self) -> None:
        windll = getattr(ctypes, "windll")  # absent off Windows: this class is built only there
        self.user32, self.shcore = windll.user32, getattr(windll, "shcore", None)
        self.user32.SendInput.restype = ctypes.c_uint32
        self.user32.VkKeyScanW.restype = ctypes.c_int16
        self.user32.VkKeyScanW.argtypes = [ctypes.c_wchar]

    def set_dpi_awareness_context(self, context: int) -> bool:
        fn = getattr(self.user32, "SetProcessDpiAwarenessContext", None)  # Windows 10 1703+
        return bool(fn and fn(ctypes.c_void_p(context)))

    def set_process_dpi_awareness(self, level: int) -> int:
        if self.shcore is None:  # before Windows 8.1: system awareness is the most there is
            return int(bool(self.user32.SetProcessDPIAware()))
        return int(self.shcore.SetProcessDpiAwareness(level))

    def process_dpi_awareness(self) -> int:
        if self.shcore is None:
            return 1 if self.user32.IsProcessDPIAware() else 0
        value = ctypes.c_int(0)
        self.shcore.GetProcessDpiAwareness(None, ctypes.byref(value))
        return value.value

    def monitors(self) -> list[Monitor]:
        found: list[tuple[bool, Monitor]] = []
        proc = getattr(ctypes, "WINFUNCTYPE")(
            ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(_Rect), ctypes.c_void_p
        )

        def each(handle: Any, _dc: Any, _rect: Any, _data: Any) -> int:
            info = _MonitorInfo(cbSize=ctypes.sizeof(_MonitorInfo))
            self.user32.GetMonitorInfoW(ctypes.c_void_p(handle), ctypes.byref(info))
            x, y = ctypes.c_uint(96), ctypes.c_uint(96)
            if self.shcore is not None:
                self.shcore.GetDpiForMonitor(
                    ctypes.c_void_p(handle), _MDT_EFFECTIVE_DPI, ctypes.byref(x), ctypes.byref(y)
                )
            r = info.rcMonitor
            found.append(
                (
                    bool(info.dwFlags & _MONITORINFOF_PRIMARY),
                    Monitor(r.left, r.top, r.right - r.left, r.bottom - r.top, int(x.value)),
                )
            )
            return 1

        self.user32.EnumDisplayMonitors(None, None, proc(each), 0)
        return [m for primary, m in found if primary] + [m for primary, m in found if not primary]

    def vk_key_scan(self, ch: str) -> int:
        return int(self.user32.VkKeyScanW(ch))

    def vk_to_scan(self, vk: int) -> int:
        return int(self.user32.MapVirtualKeyW(vk, _MAPVK_VK_TO_VSC))

    def send_input(self, inputs: Any, count: int, size: int) -> int:
        return int(self.user32.SendInput(count, inputs, size))
