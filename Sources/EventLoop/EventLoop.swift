import CLibEV
/// Placeholder so the module links libev; replaced by the loop.
public let libevVersion = (Int(ev_version_major()), Int(ev_version_minor()))
