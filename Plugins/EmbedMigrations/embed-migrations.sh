#!/bin/sh
# Usage: embed-migrations.sh OUTPUT.swift FILE.sql...
# Writes every FILE.sql as a raw string literal into OUTPUT.swift.
set -eu
out=$1
shift
tmp="$out.tmp.$$"
{
  echo '// Generated at build time from Migrations/*.sql by Plugins/EmbedMigrations. Do not edit.'
  echo 'extension EmbeddedMigrationFile {'
  echo '  /// Every `Migrations/*.sql` file at build time, sorted by name.'
  echo '  public static let all: [EmbeddedMigrationFile] = ['
  for file in "$@"; do
    name=$(basename "$file")
    case "$name" in
      *[!A-Za-z0-9_.-]*) echo "error: $file: a migration file name may hold only letters, digits, '_', '.' and '-'" >&2; exit 1 ;;
    esac
    if grep -q -e '"""#' -e '\\#' "$file"; then
      echo "error: $file contains '\"\"\"#' or '\\#', which cannot be embedded" >&2
      exit 1
    fi
    printf '    EmbeddedMigrationFile(\n      fileName: "%s",\n      sql: #"""\n' "$name"
    cat "$file"
    # A multi-line literal drops the newline before its closing delimiter: this one.
    echo
    printf '"""#),\n'
  done
  echo '  ]'
  echo '}'
} >"$tmp"
mv "$tmp" "$out"
