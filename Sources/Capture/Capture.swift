import CLibYUV
import CXCBShm
public let libyuvFilterBox = Int(CLibYUV_filter_box())
