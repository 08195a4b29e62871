"""A referral form in Qt 6 (PyQt6, run by Debian's python3): Patient and Clinic fields and a Save button that adds a
row to a SQLite table. A corpus sample for the real-app suite (tests/realapps/test_realapp_qt6form.py).

    python3 referral_form.py DB [--dark] [--patient TEXT]

--dark: Qt's Fusion style with a dark palette (the light run is Fusion with its own palette); --patient: the form
comes up with that text already in Patient (left over from an earlier entry). Scale comes from QT_SCALE_FACTOR.
"""

import argparse
import sqlite3
import sys

from PyQt6.QtGui import QColor, QPalette
from PyQt6.QtWidgets import QApplication, QFormLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

SIZE = (380, 170)  # device-independent pixels: QT_SCALE_FACTOR makes the window bigger with its fonts


def dark_palette() -> QPalette:
    p = QPalette()
    roles = {
        QPalette.ColorRole.Window: "#2b2b2b",
        QPalette.ColorRole.WindowText: "#e0e0e0",
        QPalette.ColorRole.Base: "#1e1e1e",
        QPalette.ColorRole.AlternateBase: "#333333",
        QPalette.ColorRole.Text: "#e0e0e0",
        QPalette.ColorRole.Button: "#3a3a3a",
        QPalette.ColorRole.ButtonText: "#e0e0e0",
        QPalette.ColorRole.Highlight: "#3d6fb4",
        QPalette.ColorRole.HighlightedText: "#ffffff",
        QPalette.ColorRole.ToolTipBase: "#3a3a3a",
        QPalette.ColorRole.ToolTipText: "#e0e0e0",
        QPalette.ColorRole.PlaceholderText: "#8a8a8a",
    }
    for role, colour in roles.items():
        p.setColor(role, QColor(colour))
    return p


class Form(QWidget):
    def __init__(self, db: str, patient: str) -> None:
        super().__init__()
        self.db = db
        self.setWindowTitle("Referral")
        self.patient = QLineEdit(patient)
        self.clinic = QLineEdit()
        self.status = QLabel("")
        save = QPushButton("Save")
        save.clicked.connect(self.save)
        fields = QFormLayout()
        fields.addRow("Patient", self.patient)
        fields.addRow("Clinic", self.clinic)
        buttons = QHBoxLayout()
        buttons.addWidget(self.status, 1)
        buttons.addWidget(save)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("New referral"))
        layout.addLayout(fields)
        layout.addStretch(1)
        layout.addLayout(buttons)
        self.setFixedSize(*SIZE)
        self.move(0, 0)

    def save(self) -> None:
        with sqlite3.connect(self.db) as c:
            c.execute("INSERT INTO referrals(patient, clinic) VALUES (?, ?)", (self.patient.text(), self.clinic.text()))
        self.status.setText("Referral saved")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("--dark", action="store_true")
    parser.add_argument("--patient", default="")
    ns = parser.parse_args()
    app = QApplication(["referral-qt6"])  # the X window's WM_CLASS instance name
    app.setStyle("Fusion")
    if ns.dark:
        app.setPalette(dark_palette())
    app.setCursorFlashTime(0)  # a blinking caret keeps a screen from ever settling
    form = Form(ns.db, ns.patient)
    form.show()
    sys.exit(app.exec())


if __name__ == "__main__":
    main()
