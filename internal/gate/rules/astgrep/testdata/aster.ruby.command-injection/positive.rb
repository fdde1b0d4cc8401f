class ToolsController < ApplicationController
  def ping
    # ruleid: aster.ruby.command-injection
    system("ping -c 1 #{params[:host]}")
  end

  def listing(dir)
    # ruleid: aster.ruby.command-injection
    `ls -l #{dir}`
  end
end
