"""A modal notice for the batch tests (tests/realapps/batch_harness.py): a window with no buttons that, once shown,
covers the app and takes the keyboard, as another program's dialog popping up in the middle of a work item does.

    python3 notice.py        # then, on stdin: `show X Y W H` | `hide`; it answers `shown` / `hidden` on stdout

It starts withdrawn (nothing mapped) so showing it is one map, not a program's start: the harness shows it the moment
a run's journal says the chosen step is done. Keys and clicks on it do nothing (no button Enter could press).
"""

import sys
import threading
import tkinter as tk

root = tk.Tk(className="flow-notice")  # the WM_CLASS instance name
root.withdraw()
root.configure(background="#fff4d6")
tk.Label(
    root,
    text="Updates are being installed",
    font=("DejaVu Sans", 16, "bold"),
    background="#fff4d6",
    foreground="#5a4200",
).pack(expand=True, pady=(40, 8))
tk.Label(
    root,
    text="Please wait. Do not turn off the computer.",
    font=("DejaVu Sans", 12),
    background="#fff4d6",
    foreground="#5a4200",
).pack(expand=True, pady=(0, 40))


def answer(word: str) -> None:
    print(word, flush=True)


def show(x: int, y: int, w: int, h: int) -> None:
    root.geometry(f"{w}x{h}+{x}+{y}")
    root.deiconify()
    root.lift()
    root.wait_visibility()
    root.focus_force()  # the keyboard is the dialog's now: keys meant for the app land here, and do nothing
    root.update_idletasks()
    answer("shown")


def hide() -> None:
    root.withdraw()
    root.update_idletasks()
    answer("hidden")


def read_commands() -> None:
    for line in sys.stdin:
        words = line.split()
        if words[:1] == ["show"] and len(words) == 5:
            x, y, w, h = (int(v) for v in words[1:])
            root.after(0, show, x, y, w, h)
        elif words[:1] == ["hide"]:
            root.after(0, hide)
    root.after(0, root.destroy)  # stdin closed: the harness is done with it


threading.Thread(target=read_commands, daemon=True).start()
answer("ready")
root.mainloop()
