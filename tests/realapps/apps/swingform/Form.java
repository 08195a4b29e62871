// A referral form in Java Swing: Patient and Clinic fields and a Save button that appends a JSON line to a file.
// A corpus sample for the real-app suite (tests/realapps/test_realapp_swingform.py), run with the single-file
// source launcher:
//
//     java Form.java OUT.jsonl [--dark] [--clinic TEXT] [--font-scale S]
//
// --dark: Metal with dark UIManager colours; --clinic: the form comes up with that clinic already filled in (the
// last one used); --font-scale: every UIManager font that much bigger, and the window with them (Linux's AWT
// takes -Dsun.java2d.uiScale as a whole number: 1.25 leaves a window 380x170, 2 makes it 760x340). Once the
// window is first painted it writes an empty file swingform-ready in the working directory.

import java.awt.BorderLayout;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics;
import java.awt.GridBagConstraints;
import java.awt.GridBagLayout;
import java.awt.Insets;
import java.io.FileWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.List;
import javax.swing.BorderFactory;
import javax.swing.JButton;
import javax.swing.JFrame;
import javax.swing.JLabel;
import javax.swing.JPanel;
import javax.swing.JTextField;
import javax.swing.SwingUtilities;
import javax.swing.UIManager;
import javax.swing.plaf.ColorUIResource;
import javax.swing.plaf.FontUIResource;

public class Form {
    static final int WIDTH = 380, HEIGHT = 170; // at font scale 1
    static final String READY = "swingform-ready";

    public static void main(String[] args) {
        String out = args[0], clinic = "";
        boolean dark = false;
        double fontScale = 1.0;
        for (int i = 1; i < args.length; i++) {
            switch (args[i]) {
                case "--dark" -> dark = true;
                case "--clinic" -> clinic = args[++i];
                case "--font-scale" -> fontScale = Double.parseDouble(args[++i]);
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        if (dark) darken();
        if (fontScale != 1.0) scaleFonts(fontScale);
        UIManager.put("TextField.caretBlinkRate", 0); // a blinking caret keeps a screen from ever settling
        final String prefill = clinic;
        final double scale = fontScale;
        SwingUtilities.invokeLater(() -> show(out, prefill, scale));
    }

    static void darken() {
        Color bg = new Color(0x2b2b2b), field = new Color(0x1e1e1e), text = new Color(0xe0e0e0);
        Color button = new Color(0x3c3f41), line = new Color(0x5a5a5a);
        for (String key : new String[] {"Panel.background", "Button.background", "Button.select"}) {
            UIManager.put(key, new ColorUIResource(key.startsWith("Button") ? button : bg));
        }
        for (String key : new String[] {"Label.foreground", "Button.foreground", "TextField.foreground",
                                        "TextField.caretForeground", "TextField.selectionForeground"}) {
            UIManager.put(key, new ColorUIResource(text));
        }
        UIManager.put("TextField.background", new ColorUIResource(field));
        UIManager.put("TextField.selectionBackground", new ColorUIResource(new Color(0x3d6fb4)));
        UIManager.put("TextField.border", BorderFactory.createLineBorder(line));
        ColorUIResource flat = new ColorUIResource(button); // Ocean's button gradient, in one dark colour
        UIManager.put("Button.gradient", List.of(0.3f, 0f, flat, flat, flat));
        UIManager.put("Button.focus", new ColorUIResource(line));
    }

    static void scaleFonts(double scale) {
        for (Object key : Collections.list(UIManager.getLookAndFeelDefaults().keys())) {
            if (UIManager.get(key) instanceof Font f) {
                UIManager.put(key, new FontUIResource(f.deriveFont((float) (f.getSize2D() * scale))));
            }
        }
    }

    static void show(String out, String clinic, double scale) {
        JFrame frame = new JFrame("Referral");
        frame.setDefaultCloseOperation(JFrame.EXIT_ON_CLOSE);
        JTextField patientField = new JTextField(), clinicField = new JTextField(clinic);
        JLabel status = new JLabel(" ");
        JButton save = new JButton("Save");
        save.addActionListener(e -> {
            try (FileWriter w = new FileWriter(out, true)) {
                w.write("{\"patient\": " + quote(patientField.getText()) + ", \"clinic\": "
                        + quote(clinicField.getText()) + "}\n");
            } catch (IOException ex) {
                throw new UncheckedIOException(ex);
            }
            status.setText("Referral saved");
        });
        JPanel fields = new JPanel(new GridBagLayout());
        GridBagConstraints c = new GridBagConstraints();
        c.insets = new Insets(4, 8, 4, 8);
        c.anchor = GridBagConstraints.WEST;
        c.gridx = 0; c.gridy = 0; c.gridwidth = 2;
        fields.add(new JLabel("New referral"), c);
        c.gridwidth = 1;
        String[] labels = {"Patient", "Clinic"};
        JTextField[] inputs = {patientField, clinicField};
        for (int i = 0; i < 2; i++) {
            c.gridy = i + 1; c.gridx = 0; c.weightx = 0; c.fill = GridBagConstraints.NONE;
            fields.add(new JLabel(labels[i]), c);
            c.gridx = 1; c.weightx = 1; c.fill = GridBagConstraints.HORIZONTAL;
            fields.add(inputs[i], c);
        }
        JPanel bottom = new JPanel(new BorderLayout(8, 0));
        bottom.setBorder(BorderFactory.createEmptyBorder(4, 16, 10, 8));
        bottom.add(status, BorderLayout.CENTER);
        bottom.add(save, BorderLayout.EAST);
        JPanel root = new JPanel(new BorderLayout()) {
            boolean painted;

            @Override
            public void paint(Graphics g) {
                super.paint(g);
                if (!painted) { // the first paint is done once the events queued behind it have run
                    painted = true;
                    SwingUtilities.invokeLater(Form::ready);
                }
            }
        };
        root.add(fields, BorderLayout.NORTH);
        root.add(bottom, BorderLayout.SOUTH);
        frame.setContentPane(root);
        frame.setResizable(false);
        frame.setSize((int) Math.round(WIDTH * scale), (int) Math.round(HEIGHT * scale));
        frame.setLocation(0, 0);
        frame.setVisible(true);
    }

    // an empty file in the working directory: the launcher waits for it (the JVM maps the window
    // before Swing has painted it, and a loaded machine can take longer than a settle's quiet time to paint)
    static void ready() {
        try {
            Files.writeString(Path.of(READY), "");
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char ch : s.toCharArray()) {
            if (ch == '"' || ch == '\\') b.append('\\').append(ch);
            else if (ch < 0x20) b.append(String.format("\\u%04x", (int) ch));
            else b.append(ch);
        }
        return b.append('"').toString();
    }
}
