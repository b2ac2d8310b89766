#!/bin/sh
# Starts Debian's /usr/bin/chromium for test/helpers/browser.ts with every
# --disable-features=… switch merged into one: Chromium keeps only the last
# occurrence of a switch, so the list the helper adds would otherwise replace
# the one playwright-core passes (whose features must stay disabled).
disabled=''
for arg do
  shift
  case $arg in
    --disable-features=*) disabled="${disabled:+$disabled,}${arg#--disable-features=}" ;;
    *) set -- "$@" "$arg" ;;
  esac
done
exec /usr/bin/chromium ${disabled:+"--disable-features=$disabled"} "$@"
