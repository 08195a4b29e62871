"""Model rung against a real local HTTP server speaking the chat-completions protocol."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import cv2
import numpy as np
import pytest

from openadapt_flow.bundle.models import Target
from openadapt_flow.ladder.ladder import Ladder, LadderOptions
from openadapt_flow.ladder.model_rung import ModelClient, ModelError
from openadapt_flow.vision.ocr import OcrEngine, Word

from .synthetic import Button, around, button_box, button_text_box, centre, crop, draw

pytestmark = pytest.mark.timeout(60)

SIZE = (1920, 1080)
SAVE, SEND = Button("Save", 600, 520), Button("Send", 1100, 700)
REGION = around(button_box(SAVE))
ALLOW = LadderOptions(allow_model=True)


class FakeModel:
    """A grounding model on 127.0.0.1: answers with `reply` (a point, or raw content) and records requests."""

    def __init__(self) -> None:
        self.reply: Any = {"x": 0, "y": 0}
        self.status = 200
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.release = threading.Event()
        self.hang = False
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                model.requests.append(body)
                model.headers.append(dict(self.headers))
                if model.hang:
                    model.release.wait(10)
                content = model.reply if isinstance(model.reply, str) else json.dumps(model.reply)
                data = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
                self.send_response(model.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def client(self, **kw: Any) -> ModelClient:
        return ModelClient(self.url, "grounder-1", **kw)

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def model() -> Iterator[FakeModel]:
    m = FakeModel()
    yield m
    m.close()


class ScriptedOcr(OcrEngine):
    """Reads only in small boxes (as if the wide passes missed the word): isolates the model's text check."""

    def __init__(self, words: list[Word]) -> None:
        self.words = words

    def read(self, image: np.ndarray, box: tuple[int, int, int, int] | None = None) -> list[Word]:
        x, y, w, h = box or (0, 0, image.shape[1], image.shape[0])
        if w * h > 300 * 120 or image.shape[:2] != (SIZE[1], SIZE[0]):
            return []
        return [wd for wd in self.words if x <= wd.centre[0] < x + w and y <= wd.centre[1] < y + h]


def jpeg(frame: np.ndarray, quality: int = 20) -> np.ndarray:
    out = cv2.imdecode(cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, quality])[1], cv2.IMREAD_UNCHANGED)
    assert out is not None
    return out


def strict_ladder(model: FakeModel, **opts: Any) -> Ladder:
    """Template thresholds the noisy frame cannot reach; the model's lower check threshold can."""
    options = LadderOptions(threshold=0.995, edge_threshold=0.995, allow_model=True, **opts)
    return Ladder({"t/save.png": crop(draw([SAVE, SEND]), REGION)}, SIZE, model=model.client(), options=options)


def test_honest_model_confirmed_by_the_template_check(model: FakeModel) -> None:
    live = jpeg(draw([Button("Save", 900, 300), SEND]))
    cx, cy = centre(button_box(Button("Save", 900, 300)))
    model.reply = {"x": round(cx), "y": round(cy)}
    ladder = strict_ladder(model)
    res = ladder.resolve(live, Target(template="t/save.png", region=REGION), intent="Save the invoice")
    assert res.ok and res.rung == "model", res.message
    assert abs(res.point[0] - cx) <= 2 and abs(res.point[1] - cy) <= 2  # type: ignore[index]
    assert ladder.model_calls == 1 and len(model.requests) == 1
    ev = res.evidence[-1]
    assert ev.score is not None and 0.6 <= ev.score < 0.995
    # The request: one user message with the instruction and the frame as a PNG data URI.
    parts = model.requests[0]["messages"][0]["content"]
    assert model.requests[0]["model"] == "grounder-1"
    assert "Save the invoice" in parts[0]["text"] and "1920x1080" in parts[0]["text"]
    uri = parts[1]["image_url"]["url"]
    assert uri.startswith("data:image/png;base64,")
    png = cv2.imdecode(np.frombuffer(base64.b64decode(uri.split(",", 1)[1]), np.uint8), cv2.IMREAD_UNCHANGED)
    assert png is not None and png.shape[:2] == (1080, 1920)


def test_lying_model_pointing_at_a_lookalike_is_refused(model: FakeModel) -> None:
    live = jpeg(draw([Button("Save", 900, 300), SEND]))
    sx, sy = centre(button_box(SEND))  # same shape and colour, different label
    model.reply = {"x": round(sx), "y": round(sy)}
    ladder = strict_ladder(model)
    res = ladder.resolve(live, Target(template="t/save.png", region=REGION))
    assert res.point is None and res.category == "resolution"
    ev = res.evidence[-1]
    assert ev.rung == "model" and ev.verdict == "miss" and "neither" in ev.detail
    assert ladder.model_calls == 1


def test_lying_model_pointing_at_nothing_is_refused(model: FakeModel) -> None:
    model.reply = "Sure! The button is at {\"x\": 1800, \"y\": 60}."
    ladder = strict_ladder(model)
    res = ladder.resolve(jpeg(draw([Button("Save", 900, 300)])), Target(template="t/save.png", region=REGION))
    assert res.point is None
    assert res.evidence[-1].detail.startswith("model proposed (1800, 60)")


def test_model_confirmed_by_text_read_at_its_point(model: FakeModel) -> None:
    save = Button("Save", 900, 300)
    word = Word("Save", 91, button_text_box(save))
    model.reply = {"x": round(word.centre[0]) + 5, "y": round(word.centre[1]) - 3}
    ladder = Ladder({}, SIZE, ocr=ScriptedOcr([word]), model=model.client(), options=ALLOW)
    res = ladder.resolve(draw([save]), Target(text="Save", region=(200, 200, 40, 14)))
    assert res.ok and res.rung == "model"
    assert res.point == (round(word.centre[0]), round(word.centre[1]))  # clicks the text it confirmed


def test_lying_model_fails_the_text_check(model: FakeModel) -> None:
    save = Button("Save", 900, 300)
    model.reply = {"x": 400, "y": 800}
    ladder = Ladder(
        {}, SIZE, ocr=ScriptedOcr([Word("Save", 91, button_text_box(save))]), model=model.client(), options=ALLOW
    )
    res = ladder.resolve(draw([save]), Target(text="Save", region=(200, 200, 40, 14)))
    assert res.point is None and res.evidence[-1].verdict == "miss"


def test_model_is_off_by_default(model: FakeModel) -> None:
    ladder = Ladder({}, SIZE, ocr=ScriptedOcr([]), model=model.client())
    res = ladder.resolve(draw([]), Target(text="Save", region=(200, 200, 40, 14)))
    assert res.point is None and ladder.model_calls == 0 and model.requests == []
    assert all(e.rung != "model" for e in res.evidence)


def test_model_is_never_asked_for_a_consequential_step_unless_allowed(model: FakeModel) -> None:
    save = Button("Save", 900, 300)
    word = Word("Save", 91, button_text_box(save))
    model.reply = {"x": round(word.centre[0]), "y": round(word.centre[1])}
    t = Target(text="Save", region=(200, 200, 40, 14))
    ladder = Ladder({}, SIZE, ocr=ScriptedOcr([word]), model=model.client(), options=ALLOW)
    res = ladder.resolve(draw([save]), t, consequential=True)
    assert res.point is None and model.requests == [] and ladder.model_calls == 0
    assert res.evidence[-1].verdict == "skipped"
    permissive = LadderOptions(allow_model=True, model_for_consequential=True)
    ladder = Ladder({}, SIZE, ocr=ScriptedOcr([word]), model=model.client(), options=permissive)
    assert ladder.resolve(draw([save]), t, consequential=True).ok
    assert ladder.model_calls == 1


def test_model_is_not_asked_to_pick_between_lookalikes(model: FakeModel) -> None:
    live = draw([SAVE, Button("Save", 600, 470)])
    ladder = Ladder(
        {"t/save.png": crop(draw([SAVE]), REGION)}, SIZE, ocr=ScriptedOcr([]), model=model.client(), options=ALLOW
    )
    res = ladder.resolve(live, Target(template="t/save.png", region=REGION))
    assert res.category == "ambiguous" and model.requests == []


@pytest.mark.parametrize("reply", ["I cannot see it", {"point": [3, 4]}, {"x": "12", "y": 3}])
def test_unusable_reply_is_an_error_evidence_not_a_crash(model: FakeModel, reply: Any) -> None:
    model.reply = reply
    ladder = Ladder({}, SIZE, ocr=ScriptedOcr([]), model=model.client(), options=ALLOW)
    res = ladder.resolve(draw([]), Target(text="Save", region=(200, 200, 40, 14)))
    assert res.point is None and res.evidence[-1].verdict == "error"
    assert ladder.model_calls == 1


def test_http_error_and_timeout_are_model_errors(model: FakeModel) -> None:
    frame = draw([])
    model.status = 500
    with pytest.raises(ModelError, match="HTTP 500"):
        model.client().locate(frame, "find it")
    model.status, model.hang = 200, True
    with pytest.raises(ModelError, match="too slow"):
        model.client(timeout_s=0.3).locate(frame, "find it")


def test_api_key_is_sent_as_bearer_token(model: FakeModel) -> None:
    model.reply = {"x": 1, "y": 2}
    assert model.client(api_key="k-123").locate(draw([], size=(64, 48)), "find it") == (1, 2)
    assert model.headers[0].get("Authorization") == "Bearer k-123"
