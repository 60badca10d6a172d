@echo off
rem `memvault` for Claude Code on Windows when MemoryVault is installed as a plugin: runs the plugin's
rem memvault with the venv its first session start installed (in CLAUDE_PLUGIN_DATA).
setlocal
set "ROOT=%~dp0.."
if defined CLAUDE_PLUGIN_DATA (set "DATA=%CLAUDE_PLUGIN_DATA%") else if defined CLAUDE_CONFIG_DIR (set "DATA=%CLAUDE_CONFIG_DIR%\plugins\data\memvault-memvault") else (set "DATA=%USERPROFILE%\.claude\plugins\data\memvault-memvault")
if not exist "%DATA%\venv\Scripts\python.exe" (
  echo memvault: no environment in %DATA%\venv yet; start a new Claude Code session to install it ^(log: %DATA%\install.log^) 1>&2
  exit /b 1
)
set "PYTHONPATH=%ROOT%;%PYTHONPATH%"
"%DATA%\venv\Scripts\python.exe" -m memvault %*
exit /b %ERRORLEVEL%
