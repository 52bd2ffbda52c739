print("nalcast")
