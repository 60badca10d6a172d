"""The hook processes: the launcher scripts the host runs by path, the event handlers, the injected
text, and the detached background jobs. The launchers' folder is on `sys.path` in a hook process, so no
module here may share a name with a standard-library module.
"""
