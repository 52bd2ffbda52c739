import CX264
public let x264Build = Int(CX264_build())
