<#
.SYNOPSIS
Install memvault into its own environment (Windows), connect Claude Code to it (memvault install), then
show recall working on a copy of the bundled example vault. Safe to run again.

.DESCRIPTION
  powershell -ExecutionPolicy Bypass -File install.ps1                      install, connect, demo
  powershell -ExecutionPolicy Bypass -File install.ps1 --vault C:\Obsidian  the same, and record your vault
  powershell -ExecutionPolicy Bypass -File install.ps1 -NoPythonDeps        without the embedding stack
  powershell -ExecutionPolicy Bypass -File install.ps1 -NoDemo              skip the demo
  powershell -ExecutionPolicy Bypass -File install.ps1 -Uninstall           memvault uninstall --all (every agent),
                                                                            then remove the environment (never your vault)

Every argument that is not one of the switches above goes to `memvault install` (or `memvault uninstall`):
--vault PATH, --skill-name NAME, --scope user|project, --project DIR, --dry-run.
Python: `py -3` first, then a python.exe on PATH that is not the Microsoft Store alias; $env:PYTHON overrides.
The environment goes to $env:MEMVAULT_VENV, default %LOCALAPPDATA%\memvault\venv.
$env:MEMVAULT_TORCH_SPEC: the torch requirement installed before sentence-transformers (default torch==2.13.0).
PIP_* environment variables reach pip unchanged.
Works with Windows PowerShell 5.1 and PowerShell 7.
#>
param(
    [switch]$NoPythonDeps,
    [switch]$NoDemo,
    [switch]$Uninstall
)
$ErrorActionPreference = 'Stop'
$Pass = @($args)  # everything else: options for memvault install / uninstall
$Repo = Split-Path -Parent $MyInvocation.MyCommand.Path
$DataDir = Join-Path $env:LOCALAPPDATA 'memvault'
if ($env:MEMVAULT_VENV) { $Venv = $env:MEMVAULT_VENV } else { $Venv = Join-Path $DataDir 'venv' }
$VenvPy = Join-Path $Venv 'Scripts\python.exe'
$VenvMemvault = Join-Path $Venv 'Scripts\memvault.exe'
$BinDir = Join-Path $DataDir 'bin'
$DryRun = $Pass -contains '--dry-run'
if ($env:MEMVAULT_TORCH_SPEC) { $TorchSpec = $env:MEMVAULT_TORCH_SPEC } else { $TorchSpec = 'torch==2.13.0' }

function Invoke-Native {
    # Run a program; stop with a clear message when it fails (native exit codes do not throw by themselves).
    param([string]$What, [string]$Exe, [string[]]$Arguments)
    & $Exe @Arguments
    if ($LASTEXITCODE -ne 0) { throw "install.ps1: $What failed (exit code $LASTEXITCODE)" }
}

function Test-Python {
    # The interpreter's full path when it runs and is Python 3.10 or newer, else $null.
    param([string]$Exe, [string[]]$Prefix)
    $code = 'import sys; print(sys.executable if sys.version_info >= (3, 10) else "")'
    try {
        $found = & $Exe @Prefix -c $code 2>$null
    } catch {
        return $null
    }
    if ($LASTEXITCODE -ne 0 -or -not $found) { return $null }
    $path = ([string]$found).Trim()
    if ($path -like '*\WindowsApps\*') { return $null }
    return $path
}

function Find-Python {
    if ($env:PYTHON) { return (Test-Python $env:PYTHON @()) }
    if (Get-Command py -ErrorAction SilentlyContinue) {
        $found = Test-Python 'py' @('-3')
        if ($found) { return $found }
    }
    foreach ($cmd in @(Get-Command python.exe -All -ErrorAction SilentlyContinue)) {
        if ($cmd.Source -like '*\WindowsApps\*') { continue }  # the Store alias: opens the Store, no Python
        $found = Test-Python $cmd.Source @()
        if ($found) { return $found }
    }
    return $null
}

function Get-UserPath {
    $value = [Environment]::GetEnvironmentVariable('Path', 'User')
    if ($null -eq $value) { return '' }
    return $value
}

# ---- uninstall -------------------------------------------------------------------------------
if ($Uninstall) {
    $Where = @()
    if (Test-Path $VenvMemvault) {
        # Every agent's registrations first: they name this environment's python.exe and would fail once it is gone.
        Write-Host "==> removing memvault's hooks, skill and MCP servers from every agent (memvault uninstall --all $($Pass -join ' '))"
        Invoke-Native 'memvault uninstall' $VenvMemvault (@('uninstall', '--all') + $Pass)
        $Where = @(& $VenvPy -c 'from memvault import paths; print(paths.config_file()); print(paths.state_dir())')
        if (-not $DryRun) {
            # A running service holds files of the environment open: Windows would refuse to remove them.
            $stopped = & $VenvMemvault serve --stop 2>$null
            Write-Host "==> stopping the embedding service: $(if ($stopped) { $stopped } else { 'not running' })"
        }
    } else {
        Write-Host "==> no environment at ${Venv}: nothing to uninstall (run memvault uninstall --all if you installed it elsewhere)"
    }
    if ($DryRun) {
        Write-Host "==> dry run: would remove $Venv and $BinDir"
        exit 0
    }
    if (Test-Path $BinDir) {
        Remove-Item -Recurse -Force $BinDir
        Write-Host "==> removed $BinDir"
    }
    $userPath = Get-UserPath
    $kept = @($userPath -split ';' | Where-Object { $_ -and ($_ -ne $BinDir) })
    if ($kept.Count -ne @($userPath -split ';' | Where-Object { $_ }).Count) {
        [Environment]::SetEnvironmentVariable('Path', ($kept -join ';'), 'User')
        Write-Host "==> removed $BinDir from your user PATH"
    }
    if (Test-Path $Venv) {
        Remove-Item -Recurse -Force $Venv
        Write-Host "==> removed the environment $Venv"
    }
    Write-Host ''
    Write-Host 'Uninstalled. Your vault is untouched.'
    if ($Where.Count -ge 2) {
        Write-Host "Kept: the config $($Where[0])"
        Write-Host "      and the per-machine state (index, hook logs) in $($Where[1]); delete them by hand if you want."
    }
    exit 0
}

# ---- install ---------------------------------------------------------------------------------
$Python = Find-Python
if (-not $Python) {
    throw 'install.ps1: Python 3.10 or newer is required. Install it from python.org (it includes the py launcher), or set $env:PYTHON to python.exe'
}
Write-Host "==> using $Python"
Write-Host "==> environment: $Venv"
Invoke-Native 'creating the environment' $Python @('-m', 'venv', $Venv)
Invoke-Native 'upgrading pip' $VenvPy @('-m', 'pip', 'install', '--quiet', '--upgrade', 'pip')
if ($NoPythonDeps) {
    Write-Host '==> installing memvault without embeddings (keyword-only recall)'
    Invoke-Native 'installing memvault' $VenvPy @('-m', 'pip', 'install', '--quiet', '--upgrade', "$Repo[mcp]")
} else {
    Write-Host "==> installing torch ($TorchSpec) before sentence-transformers"
    Invoke-Native 'installing torch' $VenvPy @('-m', 'pip', 'install', '--quiet', $TorchSpec)
    Write-Host '==> installing memvault with local embeddings'
    Invoke-Native 'installing memvault' $VenvPy @('-m', 'pip', 'install', '--quiet', '--upgrade', "$Repo[embeddings,mcp]")
}

# memvault.exe knows its venv's python.exe by absolute path, so a copy in a folder of its own can go on PATH
# without putting the venv's python.exe and pip.exe there too.
New-Item -ItemType Directory -Force -Path $BinDir | Out-Null
Copy-Item -Force $VenvMemvault (Join-Path $BinDir 'memvault.exe')
$userPath = Get-UserPath
if (-not (@($userPath -split ';') -contains $BinDir)) {
    if ($userPath) { $newPath = "$userPath;$BinDir" } else { $newPath = $BinDir }
    [Environment]::SetEnvironmentVariable('Path', $newPath, 'User')
    Write-Host "==> added $BinDir to your user PATH (new terminals find memvault by name)"
} else {
    Write-Host "==> memvault is on your PATH ($BinDir)"
}

Write-Host ''
Write-Host "==> memvault install $($Pass -join ' ')"
Invoke-Native 'memvault install' $VenvMemvault (@('install') + $Pass)

if (-not $NoDemo -and -not $DryRun) {
    # A throwaway copy of the example vault and a throwaway MEMVAULT_HOME: the demo touches nothing of yours.
    $DemoDir = Join-Path ([IO.Path]::GetTempPath()) ('memvault-demo-' + [Guid]::NewGuid().ToString('N').Substring(0, 8))
    $DemoVault = Join-Path $DemoDir 'vault'
    New-Item -ItemType Directory -Force -Path $DemoDir | Out-Null
    Copy-Item -Recurse (Join-Path $Repo 'examples\vault') $DemoVault
    $savedHome = $env:MEMVAULT_HOME
    $env:MEMVAULT_HOME = Join-Path $DemoDir 'home'
    try {
        $mv = @('--vault', $DemoVault)
        Write-Host ''
        Write-Host "==> demo on a copy of examples\vault ($DemoVault)"
        Invoke-Native 'memvault init' $VenvMemvault ($mv + @('init')) | Out-Null
        $today = Get-Date -Format 'yyyy-MM-dd'
        Invoke-Native 'memvault save' $VenvMemvault ($mv + @('save', 'preference', 'demo-install', "MemoryVault was installed on $today.", '--tag', 'demo'))
        Write-Host ''
        Write-Host '==> indexing the demo vault, then recalling: the note says "flaky", the question does not'
        Invoke-Native 'memvault reindex' $VenvMemvault ($mv + @('reindex'))
        # --wait: the first recall starts the warm embedding service (a few seconds to load the model).
        Invoke-Native 'memvault recall' $VenvMemvault ($mv + @('recall', 'a test that fails only sometimes', '-k', '3', '--wait', '120'))
        Write-Host ''
        Write-Host "==> what Claude Code's prompt hook adds to the same question"
        $hook = & $VenvPy -c 'import memvault, os; print(os.path.join(os.path.dirname(memvault.__file__), "hooks", "user_prompt_submit.py"))'
        $answer = '{"session_id": "demo", "prompt": "a test that fails only sometimes"}' | & $VenvPy $hook
        if ($answer) { Write-Host (($answer | Out-String) | ConvertFrom-Json).systemMessage } else { Write-Host '(nothing recalled)' }
        & $VenvMemvault @mv serve --stop | Out-Null
    } finally {
        $env:MEMVAULT_HOME = $savedHome
        Remove-Item -Recurse -Force $DemoDir -ErrorAction SilentlyContinue
    }
}

Write-Host ''
Write-Host 'Done.'
Write-Host '  Next: memvault init C:\path\to\your\ObsidianVault   (if you did not pass --vault)'
Write-Host '        then start Claude Code: relevant notes are recalled into your prompts.'
Write-Host '  Check: memvault health      Undo: powershell -ExecutionPolicy Bypass -File install.ps1 -Uninstall'
