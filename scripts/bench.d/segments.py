#!/usr/bin/env python3
"""The CJK search index's input for the bench's SQLite anchors (untimed setup).

    segments.py SRC OUT

Writes OUT, an SQLite file with one table Segments(id, content): for every message of
SRC holding a CJK character, its text with U+200B on each side of every CJK character,
the text migration 0005's view MessageSearchSegments gives (and chatdb computes in
Swift). SQLite alone has no fast way to make it (the view's recursive SQL takes about
half a millisecond a message), so the anchors read it ready-made, as they read their
rows ready-made.
"""
import re
import sqlite3
import sys

# SearchText.isCJK: kana, CJK extension A, unified ideographs, compatibility
# ideographs, Hangul syllables, supplementary ideographs.
CJK = re.compile("([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002ffff])")

src, out = sys.argv[1], sys.argv[2]
source = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
target = sqlite3.connect(out)
target.execute("DROP TABLE IF EXISTS Segments")
target.execute("CREATE TABLE Segments (id INTEGER PRIMARY KEY, content TEXT NOT NULL)")
rows = ((i, CJK.sub("\u200b\\1\u200b", c)) for i, c in source.execute("SELECT id, content FROM Messages ORDER BY id") if CJK.search(c))
target.executemany("INSERT INTO Segments VALUES (?, ?)", rows)
target.commit()
print(target.execute("SELECT count(*) FROM Segments").fetchone()[0], "messages with CJK text")
